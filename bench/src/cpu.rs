//! `cpu_seconds`: the user and system CPU time the benchmark's process has used so far, for the
//! benchmarks that report it beside wall time (`bench_eval`, `bench_serve`).

/// User and system CPU time of the whole process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage(2) fills the zeroed struct it is given and keeps nothing.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
