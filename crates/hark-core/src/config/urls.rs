//! The config's URLs, parsed by the `url` crate (the WHATWG URL standard
//! browsers follow) when the config loads: a value that is not a URL, or
//! not of the kind its key takes, is a config error that names the key,
//! its line and why, rather than a check that fails (or a string that
//! never matches) once the daemon runs.

use std::fmt;
use std::str::FromStr;

use serde::Deserialize;
pub use url::{Host, Origin, Url};

/// Why a config value is not the URL its key takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{given:?} is not a URL ({source})")]
    Parse {
        given: String,
        source: url::ParseError,
    },
    #[error("{given:?} is not an http:// or https:// URL")]
    NotHttp { given: String },
    #[error(
        "{given:?} is not an origin: an origin is scheme://host[:port] \
         (`https://box.tailnet.ts.net`), with no user, path, query or fragment"
    )]
    NotAnOrigin { given: String },
    #[error(
        "{given:?} is not a hub server's URL: nats://host:port, tls://, ws:// or wss://, \
         several comma-separated"
    )]
    NotNats { given: String },
    #[error("no URL given")]
    Empty,
}

fn parse(given: &str) -> Result<Url, UrlError> {
    Url::parse(given.trim()).map_err(|source| UrlError::Parse {
        given: given.to_owned(),
        source,
    })
}

/// An `http://` or `https://` URL (`[web] public_url`, `[push]
/// ntfy.server`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct HttpUrl(Url);

impl HttpUrl {
    pub fn as_url(&self) -> &Url {
        &self.0
    }

    /// Its origin (scheme, host and port), as a browser's `Origin` names it.
    pub fn origin(&self) -> Origin {
        self.0.origin()
    }

    /// This URL with `segments` added to its path (an empty one ends it
    /// with `/`) and `fragment`, its query dropped:
    /// `https://box.ts.net/hark` at `["api", "push", "t"]` is
    /// `https://box.ts.net/hark/api/push/t`.
    pub fn at(&self, segments: &[&str], fragment: Option<&str>) -> Url {
        let mut url = self.0.clone();
        url.set_query(None);
        url.set_fragment(fragment);
        // An http(s) URL always has a path to extend.
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }
}

impl FromStr for HttpUrl {
    type Err = UrlError;

    fn from_str(given: &str) -> Result<HttpUrl, UrlError> {
        let url = parse(given)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlError::NotHttp {
                given: given.to_owned(),
            });
        }
        Ok(HttpUrl(url))
    }
}

impl TryFrom<String> for HttpUrl {
    type Error = UrlError;

    fn try_from(given: String) -> Result<HttpUrl, UrlError> {
        given.parse()
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// A web origin, `scheme://host[:port]` with nothing after (`[web]
/// origins`): what a browser's `Origin` header and `Host` name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct WebOrigin(Url);

impl WebOrigin {
    pub fn origin(&self) -> Origin {
        self.0.origin()
    }

    pub fn as_url(&self) -> &Url {
        &self.0
    }
}

impl FromStr for WebOrigin {
    type Err = UrlError;

    fn from_str(given: &str) -> Result<WebOrigin, UrlError> {
        let url = HttpUrl::from_str(given)?.0;
        let bare = url.path() == "/"
            && url.query().is_none()
            && url.fragment().is_none()
            && url.username().is_empty()
            && url.password().is_none();
        if !bare {
            return Err(UrlError::NotAnOrigin {
                given: given.to_owned(),
            });
        }
        Ok(WebOrigin(url))
    }
}

impl TryFrom<String> for WebOrigin {
    type Error = UrlError;

    fn try_from(given: String) -> Result<WebOrigin, UrlError> {
        given.parse()
    }
}

impl fmt::Display for WebOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.origin().ascii_serialization())
    }
}

/// The team hub's servers (`[hub] url`, `--hub URL`): one or more NATS
/// URLs, comma-separated, each with its scheme (`nats`, `tls`, `ws`,
/// `wss`) and host.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct HubUrls(Vec<Url>);

impl HubUrls {
    pub fn urls(&self) -> &[Url] {
        &self.0
    }
}

impl FromStr for HubUrls {
    type Err = UrlError;

    fn from_str(given: &str) -> Result<HubUrls, UrlError> {
        let urls = given
            .split(',')
            .map(str::trim)
            .filter(|one| !one.is_empty())
            .map(|one| {
                let url = parse(one)?;
                let nats =
                    matches!(url.scheme(), "nats" | "tls" | "ws" | "wss") && url.host().is_some();
                if !nats {
                    return Err(UrlError::NotNats {
                        given: one.to_owned(),
                    });
                }
                Ok(url)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if urls.is_empty() {
            return Err(UrlError::Empty);
        }
        Ok(HubUrls(urls))
    }
}

impl TryFrom<String> for HubUrls {
    type Error = UrlError;

    fn try_from(given: String) -> Result<HubUrls, UrlError> {
        given.parse()
    }
}

impl fmt::Display for HubUrls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, url) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            f.write_str(url.as_str())?;
        }
        Ok(())
    }
}

/// Each is written back as the text it was read from (the config
/// reference's defaults serialise the config whole).
macro_rules! serialized_as_text {
    ($($ty:ty),*) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }
    )*};
}

serialized_as_text!(HttpUrl, WebOrigin, HubUrls);
