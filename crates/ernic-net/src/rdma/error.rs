//! What the endpoint's calls answer when they fail.

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// The provider failed.
    #[error("provider: {0}")]
    Provider(String),
    /// A caller's mistake: a bad handle, comm, request or size.
    #[error("{0}")]
    Invalid(String),
    /// The request failed.
    #[error("request failed: {0}")]
    Request(String),
    /// No listener answered a connect in time.
    #[error(
        "no listener answered within {ms} ms (ERNIC_NET_CONNECT_TIMEOUT_MS): the handle names \
         an endpoint or listen comm that is not there"
    )]
    ConnectTimeout {
        /// The timeout, in milliseconds.
        ms: u128,
    },
}

pub(super) fn perr(e: impl std::fmt::Display) -> NetError {
    NetError::Provider(e.to_string())
}
