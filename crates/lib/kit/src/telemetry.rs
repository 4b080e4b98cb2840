//! Tracing setup.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use crate::cli::{LogFormat, TelemetryArgs};

/// Failure to install the global tracing subscriber.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The `--log-level` filter does not parse.
    #[error("failed to parse log filter {filter:?}")]
    Filter {
        /// The filter text.
        filter: String,
        /// Why it did not parse.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// A global subscriber was already installed.
    #[error("failed to install tracing subscriber")]
    Install(#[source] tracing_subscriber::util::TryInitError),
}

/// Installs the global subscriber: logs to stderr in the chosen format, filtered by
/// `--log-level`.
pub fn init(args: &TelemetryArgs) -> Result<(), TelemetryError> {
    let filter = EnvFilter::try_new(&args.log_level).map_err(|source| TelemetryError::Filter {
        filter: args.log_level.clone(),
        source,
    })?;
    let registry = tracing_subscriber::registry().with(filter);
    let result = match args.log_format {
        LogFormat::Plain => registry
            .with(
                tracing_subscriber::fmt::layer()
                    // Colours only for a person at a terminal, not in log files.
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                    .with_writer(std::io::stderr),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    result.map_err(TelemetryError::Install)
}
