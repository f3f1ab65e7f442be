//! `netceil completions SHELL` and `netceil man`: generated from the clap definitions, so they
//! never drift from the flags.

use anyhow::Context;
use clap::CommandFactory;
use std::io::Write;
use std::path::Path;

use crate::cli::{Cli, GenShell, ManArgs};
use crate::{Done, Failure, Outcome};

pub fn completions(shell: GenShell) -> Outcome {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    let shell = match shell {
        GenShell::Bash => clap_complete::Shell::Bash,
        GenShell::Zsh => clap_complete::Shell::Zsh,
        GenShell::Fish => clap_complete::Shell::Fish,
        GenShell::Elvish => clap_complete::Shell::Elvish,
        GenShell::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut cmd, "netceil", &mut out);
    crate::out::stdout()
        .write_all(&out)
        .context("writing to stdout")?;
    Ok(Done::Success)
}

pub fn man(args: ManArgs) -> Outcome {
    let cmd = Cli::command();
    match &args.out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut page)
                .context("rendering the man page")?;
            crate::out::stdout()
                .write_all(&page)
                .context("writing to stdout")?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| {
                Failure::of_path(
                    &e,
                    anyhow::anyhow!(
                        "--out {}: cannot make a directory there: {e}",
                        dir.display()
                    ),
                )
            })?;
            let mut written = 0;
            write_pages(&cmd, "netceil", dir, &mut written)?;
            eprintln!("netceil: {written} man pages written to {}", dir.display());
        }
    }
    Ok(Done::Success)
}

/// One page for `cmd` (named `name`), then one per subcommand, `netceil-lab-up.1` style.
fn write_pages(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut usize,
) -> Result<(), Failure> {
    let cmd = cmd.clone().name(name.to_string());
    let path = dir.join(format!("{name}.1"));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut page)
        .context("rendering a man page")?;
    std::fs::write(&path, page).map_err(|e| {
        Failure::of_path(
            &e,
            anyhow::anyhow!("--out: cannot write {}: {e}", path.display()),
        )
    })?;
    *written += 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}
