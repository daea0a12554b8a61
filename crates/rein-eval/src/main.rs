//! `rein-eval`: run the eval suites, print the table, write the JSON report.
//! `cargo xtask eval` runs it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Parser;
use rein_eval::{CaseResult, ModelChoice, Report, load, regressions, run_case};
use rein_gateway::{HttpProvider, ProviderConfig, WireApi};

#[derive(Debug, Parser)]
#[command(name = "rein-eval", about = "Run rein's eval suites")]
struct Cli {
    /// A folder of suites (or one suite file).
    #[arg(long, default_value = "tests/evals")]
    suites: PathBuf,
    /// Only cases whose name or suite contains this.
    #[arg(long)]
    filter: Option<String>,
    /// `scripted` (offline, each case's rules), `anthropic`, `openai-chat`,
    /// `openai-responses`. With `--base-url` and no provider: `openai-chat`.
    #[arg(long, default_value = "scripted")]
    provider: String,
    /// The provider's base URL (an OpenAI-compatible server, a proxy).
    #[arg(long)]
    base_url: Option<String>,
    /// The model to call (real providers).
    #[arg(long)]
    model: Option<String>,
    /// Where the JSON report goes.
    #[arg(long, default_value = "target/eval/report.json")]
    report: PathBuf,
    /// Fail on a regression against this earlier report.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Also write the report here (to make it the new baseline).
    #[arg(long)]
    write_baseline: Option<PathBuf>,
    /// Model calls per turn against a real model, where a case sets none.
    #[arg(long, default_value_t = 10)]
    max_steps: u32,
    /// The output limit per call against a real model.
    #[arg(long, default_value_t = 512)]
    max_output_tokens: u32,
    /// The sampling temperature against a real model (default: the
    /// server's own; 0 makes a local model's runs repeat).
    #[arg(long, value_name = "T")]
    temperature: Option<f64>,
    /// The real model takes no images: send a text note in their place.
    #[arg(long)]
    text_only: bool,
    /// Exit 0 even when cases fail (measuring a real model's pass rate).
    #[arg(long)]
    score_only: bool,
    /// Run each case this many times and report its pass rate (a real
    /// model answers differently each time).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    repeat: u64,
}

fn model_choice(cli: &Cli) -> Result<ModelChoice> {
    let name = if cli.provider == "scripted" && cli.base_url.is_some() {
        "openai-chat"
    } else {
        cli.provider.as_str()
    };
    if name == "scripted" {
        return Ok(ModelChoice::Scripted);
    }
    let api: WireApi = name.parse()?;
    let mut config = match &cli.base_url {
        Some(url) if api == WireApi::OpenAiChat => ProviderConfig::openai_compatible(url.clone()),
        Some(url) => ProviderConfig::from_env(api).with_base_url(url.clone()),
        None => ProviderConfig::from_env(api),
    };
    if cli.base_url.is_none() && config.api_key.is_none() {
        bail!(
            "no API key for {name}: set {} or pass --base-url",
            api.key_variable()
        );
    }
    config.images = !cli.text_only;
    let model = cli
        .model
        .clone()
        .context("--model is needed with a real provider")?;
    if let Some(t) = cli.temperature {
        rein_wire::Sampling::checked_temperature(t)
            .map_err(|e| anyhow::anyhow!("--temperature {}", e.message))?;
    }
    let provider = HttpProvider::new(config)?;
    Ok(ModelChoice::Real {
        provider: Arc::new(provider),
        label: format!(
            "{name} {model}{}",
            cli.base_url
                .as_deref()
                .map(|u| format!(" at {u}"))
                .unwrap_or_default()
        ),
        model,
        max_steps: cli.max_steps,
        max_output_tokens: cli.max_output_tokens,
        temperature: cli.temperature,
    })
}

fn main() -> Result<()> {
    // A case's sandboxed command: this binary is its own helper, before
    // any thread starts.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == rein_sandbox::helper::HELPER_ARG)
    {
        rein_sandbox::helper::main();
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("REIN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let model = model_choice(&cli)?;
    let mut cases = load(&cli.suites)?;
    if let Some(filter) = &cli.filter {
        cases
            .retain(|c| c.case.name.contains(filter.as_str()) || c.suite.contains(filter.as_str()));
    }
    if cases.is_empty() {
        bail!("no eval cases found in {}", cli.suites.display());
    }
    let mut results = Vec::with_capacity(cases.len());
    for loaded in &cases {
        let mut tries = Vec::new();
        for _ in 0..cli.repeat {
            let result = run_case(loaded, &model).await;
            eprintln!(
                "eval: {:<32} {}",
                result.name,
                if result.skipped {
                    "skip"
                } else if result.passed {
                    "pass"
                } else {
                    "FAIL"
                }
            );
            let skipped = result.skipped;
            tries.push(result);
            if skipped {
                break;
            }
        }
        results.extend(CaseResult::of_tries(tries));
    }
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let report = Report::new(model.label(), date, results);
    print!("{}", report.table());
    let json = serde_json::to_string_pretty(&report)?;
    for path in std::iter::once(&cli.report).chain(cli.write_baseline.as_ref()) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!("report: {}", cli.report.display());
    let mut failed = report.passed < report.ran;
    if let Some(path) = &cli.baseline {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the baseline {}", path.display()))?;
        let mut baseline: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is not an eval report", path.display()))?;
        // A filtered run is compared on the cases it ran.
        baseline
            .cases
            .retain(|b| report.cases.iter().any(|c| c.name == b.name) || cli.filter.is_none());
        let found = regressions(&baseline, &report);
        if found.is_empty() {
            println!("no regressions against {}", path.display());
        } else {
            println!("regressions against {}:", path.display());
            for line in &found {
                println!("  - {line}");
            }
            failed = true;
        }
    }
    if failed && !cli.score_only {
        bail!("the eval failed");
    }
    Ok(())
}
