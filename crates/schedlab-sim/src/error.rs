//! Input errors of the replay tool and the simulator: each names the file, the line where it
//! can be found, the key or column, and the value.

use schedlab_core::ConfigError;

use crate::trace::TraceError;

/// Bad input: a configuration value, a trace row, a file that cannot be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// A TOML file that does not parse.
    #[error("{file}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's message (it names the line and column).
        message: String,
    },
    /// A configuration value that breaks a rule.
    #[error("{file}{}: {error}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Config {
        /// The file.
        file: String,
        /// The line of the key, when it could be located.
        line: Option<usize>,
        /// Key path, value and rule.
        error: ConfigError,
    },
    /// A malformed trace row.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A file that cannot be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The run was stopped by its watcher (Ctrl-C, SIGTERM) before it finished.
    #[error("interrupted before the run finished")]
    Interrupted,
}

impl InputError {
    /// A configuration error in `file` whose text is `text`, with the key's line located.
    pub fn config(file: &str, text: &str, error: ConfigError) -> InputError {
        let line = schedlab_core::config::locate_key(text, &error.path);
        InputError::Config {
            file: file.to_string(),
            line,
            error,
        }
    }
}
