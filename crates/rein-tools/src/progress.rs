//! [`Progress`]: how a running call tells the person how far it got.
//!
//! A tool (an MCP server's, a long build) may report progress while it runs;
//! the runner turns each report into a live UI event. Progress is for the
//! person watching, not for the model and not for the log: it is dropped
//! when nobody listens, and a report never blocks the call.

use std::sync::Arc;

/// One progress report.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressReport {
    /// How far it got (in the tool's own unit).
    pub done: f64,
    /// Out of how much, when known.
    pub total: Option<f64>,
    /// A short message, when the tool gives one.
    pub message: Option<String>,
}

type Sink = Arc<dyn Fn(ProgressReport) + Send + Sync>;

/// Where a running call sends its progress; cheap to clone. The default
/// sends nowhere.
#[derive(Clone, Default)]
pub struct Progress {
    sink: Option<Sink>,
}

impl Progress {
    /// Reports go nowhere.
    pub fn none() -> Self {
        Progress::default()
    }

    /// Reports go to `sink`, which must not block.
    pub fn to(sink: impl Fn(ProgressReport) + Send + Sync + 'static) -> Self {
        Progress {
            sink: Some(Arc::new(sink)),
        }
    }

    /// Report progress.
    pub fn report(&self, report: ProgressReport) {
        if let Some(sink) = &self.sink {
            sink(report);
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("listened", &self.sink.is_some())
            .finish()
    }
}
