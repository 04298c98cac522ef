//! TLS to what replicas share: a Postgres that admits TLS connections only and a Redis that
//! speaks TLS only (`rediss://`), each with a certificate of an authority made for the test.
//! A serve trusting that authority (a URL's `sslrootcert`, or `SSL_CERT_FILE`) keeps its keys
//! and ledger in the one and counts rates in the other, and Postgres sees its connections
//! encrypted; one that cannot verify the server is refused with the reason, at once, and a
//! password shows nowhere.

use std::process::Stdio;

use crate::serve::Served;
use crate::serve_postgres::{chat, UPSTREAM_KEY};
use crate::support::fake_openai::{Behavior, FakeOpenAi};
use crate::support::fleet::Redis;
use crate::support::postgres::{Cluster, PASSWORD};
use crate::support::prometheus::program;
use crate::support::tls_front::TestCa;

const REDIS_PASSWORD: &str = "redis-tls-pass-0123456789";

/// `genai ARGS` on `served`'s folders with `url` as the database: its status and stderr.
fn genai(
    served: &Served,
    url: &str,
    cert_file: Option<&str>,
    args: &[&str],
) -> (bool, String, String) {
    let mut c = served.genai(args);
    c.env("GENAI_DATABASE_URL", url).env_remove("SSL_CERT_FILE");
    if let Some(file) = cert_file {
        c.env("SSL_CERT_FILE", file);
    }
    let o = c.stdin(Stdio::null()).output().unwrap();
    let (out, err) = (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    );
    assert!(!err.contains(PASSWORD), "the password shown: {err}");
    (o.status.success(), out, err)
}

#[tokio::test]
async fn a_serve_keeps_its_state_over_tls_and_refuses_a_server_it_cannot_verify() {
    let Some(program) = program("GENAI_TEST_REDIS", "redis-server") else {
        return;
    };
    let ca = TestCa::make();
    let Some(db) = Cluster::start_tls(&ca) else {
        return;
    };
    let redis = Redis::start_tls(&program, Some(REDIS_PASSWORD), &ca);
    let fake = FakeOpenAi::start(0, Behavior::text("Over TLS.")).unwrap();
    let ca_file = ca.ca_file().display().to_string();
    // libpq's spelling: the store trusts the authority named in the URL; Redis the
    // system's roots, here `SSL_CERT_FILE`.
    let url = format!("{}?sslmode=verify-full&sslrootcert={ca_file}", db.url());
    let config = format!(
        "[defaults]\nmodel = \"openai:gpt-tls\"\n\n[store]\nurl = \"{url}\"\n\n[serve]\nredis_url = \"{}\"\n",
        redis.url()
    );
    let base_url = fake.base_url();
    let upstream = [
        ("OPENAI_BASE_URL", base_url.as_str()),
        ("OPENAI_API_KEY", UPSTREAM_KEY),
    ];
    let trusting = [&upstream[..], &[("SSL_CERT_FILE", ca_file.as_str())]].concat();
    let served = Served::start_with(&config, &trusting, &["--no-preload"]);

    // A key made over TLS, its rate counted in Redis over TLS: the third request is refused.
    let (ok, key, err) = genai(
        &served,
        &url,
        None,
        &["serve", "keys", "create", "tls", "--rpm", "2"],
    );
    assert!(ok, "{err}");
    let key = key.trim();
    assert_eq!(chat(&served, key).await.0, 200);
    assert_eq!(chat(&served, key).await.0, 200);
    let (status, body) = chat(&served, key).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded", "{body}");

    // Postgres saw the serve's connections encrypted, and holds the three requests' rows.
    let encrypted = db.psql(
        "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
         WHERE a.application_name = 'genai serve'",
    );
    assert_eq!(encrypted, "t", "a connection of the serve is not encrypted");
    let rows = db.psql("SELECT string_agg(status, ',' ORDER BY id) FROM gateway_requests");
    assert_eq!(rows, "200,200,429");

    // sslmode=require verifies too: without the authority the server is refused, naming
    // why; a URL without sslmode connects in plain, which this server refuses.
    let require = format!("{}?sslmode=require", db.url());
    let (ok, _, err) = genai(&served, &require, None, &["serve", "keys", "list"]);
    assert!(!ok);
    assert!(err.contains("invalid peer certificate"), "{err}");
    assert!(err.contains("sslrootcert=PATH"), "{err}");
    let (ok, _, _) = genai(
        &served,
        &require,
        Some(&ca_file),
        &["serve", "keys", "list"],
    );
    assert!(ok, "SSL_CERT_FILE's authority is trusted for Postgres too");
    let (ok, _, err) = genai(&served, &db.url(), None, &["serve", "keys", "list"]);
    assert!(!ok);
    assert!(err.contains("no encryption"), "{err}");
    assert!(err.contains("add ?sslmode=require"), "{err}");

    // A replica that cannot verify Redis: a limited key is answered 503 at once, not hung.
    let other = Served::start_with(&config, &upstream, &["--no-preload"]);
    let (status, body) = chat(&other, key).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "rate_limits_unavailable", "{body}");
    let told = body.to_string();
    assert!(told.contains("rediss://127.0.0.1:"), "{told}");
    assert!(!told.contains(REDIS_PASSWORD), "{told}");
    for log in [served.log(), other.log()] {
        assert!(
            !log.contains(PASSWORD) && !log.contains(REDIS_PASSWORD),
            "{log}"
        );
    }
}
