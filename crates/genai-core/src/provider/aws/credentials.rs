//! AWS credentials and region, looked up the way the AWS CLI and SDKs do for the common cases:
//! the `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` environment
//! variables, the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`, else
//! `~/.aws/credentials`) and the shared config file (`AWS_CONFIG_FILE`, else `~/.aws/config`),
//! under a profile (the configured one, else `AWS_PROFILE`, else `default`).
//!
//! It owns reading those variables and files. It must never put a secret in an error or a log
//! line (errors name the variable, the file and the profile, never a value), and never runs
//! anything: profiles that need a process, SSO or a role to assume are refused with a hint.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use ini::{Ini, ParseOption};

use crate::error::{Error, ErrorKind, Result};
use crate::secrets::Secret;

/// A set of AWS credentials for SigV4. `Debug` never shows the secret parts.
#[derive(Clone)]
pub(crate) struct AwsCredentials {
    pub(crate) access_key_id: String,
    pub(crate) secret_access_key: Secret,
    pub(crate) session_token: Option<Secret>,
    /// Where they came from (`the environment`, `profile work in /home/u/.aws/credentials`).
    pub(crate) source: String,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Where variables and files are read from: the process, or a fixed map in tests.
pub(crate) struct AwsEnv {
    vars: HashMap<String, String>,
    home: Option<PathBuf>,
}

impl AwsEnv {
    /// The process environment and home folder.
    pub(crate) fn process() -> AwsEnv {
        AwsEnv {
            vars: std::env::vars()
                .filter(|(k, _)| k.starts_with("AWS_"))
                .collect(),
            home: dirs::home_dir(),
        }
    }

    /// Fixed variables and home folder (tests).
    #[cfg(test)]
    pub(crate) fn fixed(vars: &[(&str, &str)], home: Option<&Path>) -> AwsEnv {
        AwsEnv {
            vars: vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            home: home.map(Path::to_path_buf),
        }
    }

    /// A variable's value, blank counting as unset.
    pub(crate) fn var(&self, name: &str) -> Option<String> {
        self.vars
            .get(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn file(&self, var: &str, name: &str) -> Option<PathBuf> {
        self.var(var)
            .map(PathBuf::from)
            .or_else(|| self.home.as_ref().map(|h| h.join(".aws").join(name)))
    }

    /// `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`.
    pub(crate) fn credentials_file(&self) -> Option<PathBuf> {
        self.file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
    }

    /// `AWS_CONFIG_FILE`, else `~/.aws/config`.
    pub(crate) fn config_file(&self) -> Option<PathBuf> {
        self.file("AWS_CONFIG_FILE", "config")
    }

    /// The profile to use: the configured one, else `AWS_PROFILE`, else `default`.
    pub(crate) fn profile(&self, configured: Option<&str>) -> String {
        configured
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .or_else(|| self.var("AWS_PROFILE"))
            .unwrap_or_else(|| "default".to_string())
    }
}

/// One profile's keys and values from the credentials file or the config file.
type Profile = HashMap<String, String>;

/// Reads one profile from an INI file: `[NAME]` in the credentials file, `[profile NAME]` (or
/// `[default]`) in the config file. `Ok(None)` when the file or the profile is missing.
fn read_profile(path: &Path, profile: &str, config_style: bool) -> Result<Option<Profile>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::new(
                ErrorKind::MissingCredentials,
                format!("cannot read {}: {e}", path.display()),
            ))
        }
    };
    let opt = ParseOption {
        enabled_quote: false,
        enabled_escape: false,
        ..ParseOption::default()
    };
    // The parser's message quotes the offending line, which may hold a key: show only where.
    let ini = Ini::load_from_str_opt(&text, opt).map_err(|e| {
        Error::new(
            ErrorKind::MissingCredentials,
            format!(
                "{} is not a valid INI file (line {})",
                path.display(),
                e.line
            ),
        )
    })?;
    for name in ini.sections().flatten() {
        let words: Vec<&str> = name.split_whitespace().collect();
        let matches = match words.as_slice() {
            [single] => *single == profile && (!config_style || profile == "default"),
            ["profile", p] => config_style && *p == profile,
            _ => false,
        };
        if matches {
            let props = ini.section(Some(name)).into_iter().flat_map(|s| s.iter());
            return Ok(Some(
                props
                    .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                    .collect(),
            ));
        }
    }
    Ok(None)
}

fn from_profile_map(p: &Profile, source: String) -> Option<AwsCredentials> {
    let get = |k: &str| p.get(k).filter(|v| !v.is_empty()).cloned();
    Some(AwsCredentials {
        access_key_id: get("aws_access_key_id")?,
        secret_access_key: Secret::new(get("aws_secret_access_key")?),
        session_token: get("aws_session_token").map(Secret::new),
        source,
    })
}

/// Keys the shared files may use that need more than a file read.
const UNSUPPORTED: &[&str] = &[
    "credential_process",
    "sso_session",
    "sso_start_url",
    "role_arn",
    "web_identity_token_file",
];

/// The static credentials of `profile`: the credentials file first, then the config file.
pub(crate) fn from_profile(env: &AwsEnv, profile: &str) -> Result<Option<AwsCredentials>> {
    let mut unsupported = None;
    for (path, config_style) in [(env.credentials_file(), false), (env.config_file(), true)] {
        let Some(path) = path else { continue };
        let Some(p) = read_profile(&path, profile, config_style)? else {
            continue;
        };
        if let Some(c) = from_profile_map(&p, format!("profile {profile} in {}", path.display())) {
            return Ok(Some(c));
        }
        if let Some(k) = UNSUPPORTED.iter().find(|k| p.contains_key(**k)) {
            unsupported = Some((k.to_string(), path));
        }
    }
    if let Some((key, path)) = unsupported {
        return Err(Error::new(
            ErrorKind::MissingCredentials,
            format!(
                "AWS profile {profile} in {} uses {key}, which genai does not run; export static credentials instead (`aws configure export-credentials --profile {profile} --format env`)",
                path.display()
            ),
        ));
    }
    Ok(None)
}

/// `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), when both are set.
pub(crate) fn from_env(env: &AwsEnv) -> Option<AwsCredentials> {
    Some(AwsCredentials {
        access_key_id: env.var("AWS_ACCESS_KEY_ID")?,
        secret_access_key: Secret::new(env.var("AWS_SECRET_ACCESS_KEY")?),
        session_token: env.var("AWS_SESSION_TOKEN").map(Secret::new),
        source: "the environment".to_string(),
    })
}

/// Credentials for SigV4: a configured profile wins; else the environment; else the profile
/// named by `AWS_PROFILE` (or `default`) in the shared files.
pub(crate) fn resolve(env: &AwsEnv, configured_profile: Option<&str>) -> Result<AwsCredentials> {
    let explicit = configured_profile.is_some_and(|p| !p.trim().is_empty());
    if !explicit {
        if let Some(c) = from_env(env) {
            return Ok(c);
        }
    }
    let profile = env.profile(configured_profile);
    if let Some(c) = from_profile(env, &profile)? {
        return Ok(c);
    }
    let files: Vec<String> = [env.credentials_file(), env.config_file()]
        .into_iter()
        .flatten()
        .map(|p| p.display().to_string())
        .collect();
    let files = if files.is_empty() {
        "the shared credentials file (no home folder)".to_string()
    } else {
        files.join(" or ")
    };
    Err(Error::new(
        ErrorKind::MissingCredentials,
        if explicit {
            format!("no AWS credentials for profile {profile} in {files}")
        } else {
            format!(
                "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, add profile {profile} to {files}, or set a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK"
            )
        },
    ))
}

/// The region: the configured one, else `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the
/// profile's `region` in the config file. `Ok(None)` when none says.
pub(crate) fn region(
    env: &AwsEnv,
    configured: Option<&str>,
    configured_profile: Option<&str>,
) -> Result<Option<String>> {
    if let Some(r) = configured.map(str::trim).filter(|r| !r.is_empty()) {
        return Ok(Some(r.to_string()));
    }
    if let Some(r) = env
        .var("AWS_REGION")
        .or_else(|| env.var("AWS_DEFAULT_REGION"))
    {
        return Ok(Some(r));
    }
    let profile = env.profile(configured_profile);
    let Some(path) = env.config_file() else {
        return Ok(None);
    };
    Ok(read_profile(&path, &profile, true)?
        .and_then(|p| p.get("region").cloned())
        .filter(|r| !r.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn environment_first_then_the_profile_of_the_shared_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".aws")).unwrap();
        write(
            &dir.path().join(".aws"),
            "credentials",
            "# comment\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s/ec+ret=\n\n[work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=WORKSECRET9\naws_session_token=SESSIONTOK9\n",
        );
        write(
            &dir.path().join(".aws"),
            "config",
            "[default]\nregion = eu-west-1\n[profile work]\nregion = us-west-2\n",
        );
        let env = AwsEnv::fixed(
            &[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "e"),
            ],
            Some(dir.path()),
        );
        let c = resolve(&env, None).unwrap();
        assert_eq!(
            (c.access_key_id.as_str(), c.source.as_str()),
            ("AKIDENV", "the environment")
        );
        // A configured profile wins over the environment.
        let c = resolve(&env, Some("work")).unwrap();
        assert_eq!(c.access_key_id, "AKIDWORK");
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("SESSIONTOK9") && !shown.contains("WORKSECRET9"),
            "{shown}"
        );
        assert_eq!(c.session_token.unwrap().expose(), "SESSIONTOK9");

        let env = AwsEnv::fixed(&[], Some(dir.path()));
        let c = resolve(&env, None).unwrap();
        assert_eq!(c.access_key_id, "AKIDDEFAULT");
        assert_eq!(c.secret_access_key.expose(), "s/ec+ret=");
        assert!(c.source.starts_with("profile default in "), "{}", c.source);
        let env = AwsEnv::fixed(&[("AWS_PROFILE", "work")], Some(dir.path()));
        assert_eq!(resolve(&env, None).unwrap().access_key_id, "AKIDWORK");
        assert_eq!(
            region(&env, None, None).unwrap().as_deref(),
            Some("us-west-2")
        );
        assert_eq!(
            region(&env, None, Some("default")).unwrap().as_deref(),
            Some("eu-west-1")
        );
        let env = AwsEnv::fixed(&[("AWS_DEFAULT_REGION", "ap-south-1")], Some(dir.path()));
        assert_eq!(
            region(&env, None, None).unwrap().as_deref(),
            Some("ap-south-1")
        );
        assert_eq!(
            region(&env, Some("ca-central-1"), None).unwrap().as_deref(),
            Some("ca-central-1")
        );
    }

    #[test]
    fn missing_and_unsupported_profiles_are_clear_and_show_no_secret() {
        let dir = tempfile::tempdir().unwrap();
        let creds = write(
            dir.path(),
            "creds",
            "[default]\naws_access_key_id=AKID\naws_secret_access_key=SECRETVALUE\n",
        );
        let config = write(
            dir.path(),
            "config",
            "[profile sso]\nsso_session = corp\nregion = us-east-1\n",
        );
        let vars = [
            ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap()),
            ("AWS_CONFIG_FILE", config.to_str().unwrap()),
        ];
        let env = AwsEnv::fixed(&vars, None);
        let e = resolve(&env, Some("nope")).unwrap_err();
        assert_eq!(e.kind, ErrorKind::MissingCredentials);
        assert!(e.message.contains("profile nope"), "{}", e.message);
        let e = resolve(&env, Some("sso")).unwrap_err();
        assert!(e.message.contains("uses sso_session"), "{}", e.message);
        // The config file's `[sso]` without `profile ` is not that profile.
        assert_eq!(
            region(&env, None, Some("sso")).unwrap().as_deref(),
            Some("us-east-1")
        );

        let bad = write(
            dir.path(),
            "bad",
            "[default\naws_secret_access_key=SECRETVALUE\n",
        );
        let vars = [("AWS_SHARED_CREDENTIALS_FILE", bad.to_str().unwrap())];
        let e = resolve(&AwsEnv::fixed(&vars, None), None).unwrap_err();
        assert!(!e.message.contains("SECRETVALUE"), "{}", e.message);
        let e = resolve(&AwsEnv::fixed(&[], None), None).unwrap_err();
        assert!(e.message.contains("AWS_ACCESS_KEY_ID"), "{}", e.message);
    }
}
