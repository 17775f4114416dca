//! `airlock init`: a home directory (config.toml, the trusted keypair, a local store) and, in a
//! git work tree, an exclude line so the home is never committed.
//!
//! Guards against: what `config::create_home` guards against (a readable private key, a
//! half-made home), plus a home inside a repository that `git add -A` would publish.

use anyhow::Result;

use crate::config::{
    create_home, exclude_from_git, GlobalOptions, TRUSTED_KEY_FILE, TRUSTED_PUB_FILE,
};
use crate::exit::Outcome;

/// What `airlock init` is asked to do.
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Object store URL; `None`: a store directory inside the home directory.
    pub store: Option<String>,
    /// Print the result as JSON.
    pub json: bool,
}

/// `airlock init`: writes config.toml and a fresh trusted keypair.
pub fn run(global: &GlobalOptions, args: &InitOptions) -> Result<Outcome> {
    let created = create_home(&global.home, args.store.as_deref())?;
    let (abs_home, store, key_id) = (&created.dir, &created.store, &created.key_id);
    let excluded = exclude_from_git(abs_home)?;
    if args.json {
        crate::output::print_json(&serde_json::json!({
            "home": abs_home,
            "store": store,
            "trusted_pub": abs_home.join(TRUSTED_PUB_FILE),
            "key_id": key_id,
            "git_exclude": excluded.as_ref().map(|(file, line)| serde_json::json!({
                "file": file,
                "pattern": line,
            })),
        }))?;
    } else {
        println!("initialised {}", abs_home.display());
        println!("  store        {store}");
        println!(
            "  trusted key  {} (0600, never leaves this host)",
            abs_home.join(TRUSTED_KEY_FILE).display()
        );
        println!(
            "  public key   {} (give this to workers)",
            abs_home.join(TRUSTED_PUB_FILE).display()
        );
        println!("  key id       {key_id}");
        if let Some((file, line)) = &excluded {
            println!(
                "  git          {line} added to {} (never committed)",
                file.display()
            );
        }
    }
    Ok(Outcome::Ok)
}
