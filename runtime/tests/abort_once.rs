//! Abort mode with several threads failing at once prints each report
//! exactly once and aborts (issue 13, 11): the first thread to die prints,
//! the others wait for the abort. Runs the race in a child process (this
//! test binary re-executed), since the runtime ends the process.

use guardlift_runtime::internals::*;
use guardlift_runtime::{
    Mode, ModuleSites, Observed, ReportKind, Runtime, RuntimeConfig, SiteInfo,
};

mod common;

const CHILD: &str = "GUARDLIFT_ABORT_ONCE_CHILD";

fn child() -> ! {
    let rt = Runtime::new(RuntimeConfig {
        mode: Mode::Abort,
        ..Default::default()
    });
    let sites: ModuleSites = [(
        0,
        SiteInfo {
            function: "f".into(),
            line: 3,
            col: 5,
            op: "adstack.push".into(),
        },
    )]
    .into();
    let base = rt.register_sites(sites).unwrap();
    let barrier = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..1000 {
                    rt.report(
                        ReportKind::AdstackOverflow,
                        base,
                        Observed::Adstack {
                            capacity: 4,
                            len: 4,
                        },
                    );
                }
            });
        }
    });
    unreachable!("abort mode ends the process")
}

#[test]
fn several_failing_threads_print_one_report() {
    if std::env::var_os(CHILD).is_some() {
        child();
    }
    for _ in 0..20 {
        let out = common::target_command(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "several_failing_threads_print_one_report",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "the child must abort");
        assert_eq!(
            err.matches("==guardlift== ERROR").count(),
            1,
            "exactly one report:\n{err}"
        );
    }
}
