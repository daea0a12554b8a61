//! The criterion results under `target/criterion` as one markdown table.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;

/// One benchmark's mean and throughput.
struct Row {
    id: String,
    mean_ns: f64,
    throughput: Option<(String, f64)>,
}

fn rows(dir: &Path, out: &mut Vec<Row>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") {
                if let Some(row) = row(&path) {
                    out.push(row);
                }
            } else if path
                .file_name()
                .is_none_or(|n| n != "base" && n != "report")
            {
                rows(&path, out);
            }
        }
    }
}

fn row(new: &Path) -> Option<Row> {
    let read = |name: &str| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(new.join(name)).ok()?).ok()
    };
    let benchmark = read("benchmark.json")?;
    let estimates = read("estimates.json")?;
    let mean_ns = estimates["mean"]["point_estimate"].as_f64()?;
    let throughput = benchmark["throughput"].as_object().and_then(|t| {
        let (kind, n) = t.iter().next()?;
        Some((kind.clone(), n.as_f64()?))
    });
    Some(Row {
        id: benchmark["full_id"].as_str()?.to_owned(),
        mean_ns,
        throughput,
    })
}

fn time(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// The table of every criterion result found, sorted by id.
pub fn table(root: &Path) -> Result<String> {
    let mut found = Vec::new();
    rows(&root.join("target/criterion"), &mut found);
    found.sort_by(|a, b| a.id.cmp(&b.id));
    let mut out = String::from("| benchmark | mean | throughput |\n| --- | ---: | ---: |\n");
    for r in &found {
        let rate = match &r.throughput {
            Some((kind, n)) if kind == "Bytes" => {
                format!("{:.0} MiB/s", n / (r.mean_ns / 1e9) / (1024.0 * 1024.0))
            }
            Some((_, n)) => format!("{:.0} /s", n / (r.mean_ns / 1e9)),
            None => String::new(),
        };
        out.push_str(&format!("| `{}` | {} | {rate} |\n", r.id, time(r.mean_ns)));
    }
    Ok(out)
}
