//! The error-code reference (`docs/reference/errors.md`) is generated from
//! the registry — each code, its HTTP status, whether trying again may
//! help, what it means and what to do — and never written by hand: this
//! test fails when the page and the registry drift apart
//! (`REIN_REFERENCE_BLESS=1` writes it anew).

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

#[test]
fn the_error_reference_is_the_registry() {
    let mut codes = rein_wire::error::all_codes();
    codes.sort_by(|a, b| a.code.as_str().cmp(b.code.as_str()));
    let mut page = String::from(
        "# Error codes\n\n\
         Generated from `rein_wire::error`'s registry by `crates/rein-wire/tests/reference.rs`\n\
         (`REIN_REFERENCE_BLESS=1 cargo test -p rein-wire --test reference`); do not edit.\n\n\
         Every error rein reports carries one of these codes: in a problem body over HTTP\n\
         (`code`, with the status below), in a tool's result (`error.code`), on the terminal\n\
         (`error[code]`). A product registers its own beside them.\n\n\
         | code | HTTP | retry | what it means | what to do |\n|---|---:|:-:|---|---|\n",
    );
    for info in &codes {
        let cell = |text: &str| text.replace('|', "\\|");
        page.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            info.code.as_str(),
            info.status,
            if info.retryable { "yes" } else { "no" },
            cell(&info.title),
            cell(&info.hint),
        ));
    }
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/errors.md");
    if std::env::var_os("REIN_REFERENCE_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == page,
        "docs/reference/errors.md is stale: run REIN_REFERENCE_BLESS=1 cargo test -p rein-wire --test reference"
    );
}
