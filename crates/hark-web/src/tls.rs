//! HTTPS, with the certificate and key the config names: rustls (with
//! *ring* as its crypto, which builds without CMake), served by
//! axum-server, which does the per-connection handshakes.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsFiles;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the TLS certificate chain {}: {source}", path.display())]
    Cert {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("cannot read the TLS key {}: {source}", path.display())]
    Key {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("the TLS certificate {} holds no certificate", .0.display())]
    NoCert(PathBuf),
    #[error("the TLS certificate and key do not make a server config: {0}")]
    Config(#[from] rustls::Error),
}

/// The server config of `files`: every certificate of the chain, its key.
pub fn config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|source| TlsError::Key {
        path: files.key.clone(),
        source,
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |source| TlsError::Cert {
        path: path.to_owned(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(bad)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    if certs.is_empty() {
        return Err(TlsError::NoCert(path.to_owned()));
    }
    Ok(certs)
}

/// Serves `app` over TLS on `listener` until `stop`, then drains for
/// [`crate::DRAIN`] at most (axum-server's graceful shutdown).
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: crate::App,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let config = axum_server::tls_rustls::RustlsConfig::from_config(tls);
    let listener = listener.into_std()?;
    let handle = axum_server::Handle::new();
    let stopping = handle.clone();
    tokio::spawn(async move {
        stop.await;
        stopping.graceful_shutdown(Some(crate::DRAIN));
    });
    axum_server::from_tcp_rustls(listener, config)
        .handle(handle)
        .serve(app)
        .await
}
