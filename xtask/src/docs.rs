//! Writing measured tables into `docs/BENCHMARKS.md`: each generated section
//! sits between `<!-- NAME:begin -->` and `<!-- NAME:end -->` and is replaced
//! whole; the hand-written text around it is kept.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

/// The benchmarks document.
pub const BENCHMARKS: &str = "docs/BENCHMARKS.md";

/// Replace section `name` of `file` with `body` (appended at the end when the
/// markers are not there yet).
pub fn replace_section(file: &Path, name: &str, body: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let section = format!("{begin}\n{}\n{end}", body.trim_end());
    let updated = match (text.find(&begin), text.find(&end)) {
        (Some(b), Some(e)) if e > b => {
            format!("{}{section}{}", &text[..b], &text[e + end.len()..])
        }
        _ => format!("{}\n\n{section}\n", text.trim_end()),
    };
    std::fs::write(file, updated).with_context(|| format!("cannot write {}", file.display()))
}

/// One line on the machine and the date, for a measured table.
pub fn machine_line() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("{date}; {cores} cores ({cpu}), {mem_gib:.0} GiB; load average {load} at the start")
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_section_is_replaced_whole_and_the_rest_kept() {
        let dir = std::env::temp_dir().join(format!("xtask-docs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("B.md");
        std::fs::write(
            &file,
            "# B\n\nintro\n\n<!-- t:begin -->\nold\n<!-- t:end -->\n\nafter\n",
        )
        .unwrap();
        replace_section(&file, "t", "new table\n").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            text,
            "# B\n\nintro\n\n<!-- t:begin -->\nnew table\n<!-- t:end -->\n\nafter\n"
        );
        replace_section(&file, "u", "appended").unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.ends_with("after\n\n<!-- u:begin -->\nappended\n<!-- u:end -->\n"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
