//! The recall benchmark: `recall`'s search over a memory file of 100,000
//! items, in one scope and spread over a hundred (`rein-recall`, crate
//! `rein-bench`).

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use serde_json::Value;

use crate::docs;

/// Items in the file, and the scopes they are spread over.
const RUNS: [(usize, usize); 2] = [(100_000, 1), (100_000, 100)];

/// Run it and write its table.
pub fn bench(root: &Path) -> Result<()> {
    crate::cargo(&["build", "--release", "--locked", "-p", "rein-bench"], &[])?;
    let machine = docs::machine_line();
    let mut rows = Vec::new();
    for (items, scopes) in RUNS {
        eprintln!("xtask: rein-recall --items {items} --scopes {scopes}");
        let mut command = Command::new(root.join("target/release/rein-recall"));
        command
            .args(["--items", &items.to_string()])
            .args(["--scopes", &scopes.to_string()]);
        rows.push(crate::scale::record_of(command, "rein-recall")?);
    }
    let table = table(&rows);
    println!("{table}");
    let body = format!(
        "Measured {machine}, with `cargo xtask bench recall`: a fresh `SqliteMemory` file filled in transactions of 1,000 items (12 words each from a 5,000-word vocabulary), then 2,000 searches of two words in the first scope, at most 5 results, as `recall` asks.\n\n{table}"
    );
    docs::replace_section(&root.join(docs::BENCHMARKS), "recall", &body)
}

fn table(rows: &[Value]) -> String {
    let mut out = String::from(
        "| items | scopes | items in the searched scope | file MB | fill s | search p50 / p99 / max ms | results per search |\n|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    for r in rows {
        let items = r["items"].as_u64().unwrap_or(0);
        let scopes = r["scopes"].as_u64().unwrap_or(1).max(1);
        out.push_str(&format!(
            "| {items} | {scopes} | {} | {:.1} | {:.1} | {:.2} / {:.2} / {:.2} | {:.1} |\n",
            items.div_ceil(scopes),
            f(r, "file_mb"),
            f(r, "fill_s"),
            f(r, "p50_ms"),
            f(r, "p99_ms"),
            f(r, "max_ms"),
            f(r, "mean_results"),
        ));
    }
    out
}
