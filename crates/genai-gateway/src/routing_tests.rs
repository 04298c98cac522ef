//! The router's strategies, cooldowns and counters, on instants and draws the tests give.

use super::*;
use genai_core::config::serve_models::{Deployment as Listed, Wait};

fn router(strategy: Strategy, weights: &[u32], cooldown: f64) -> Arc<Router> {
    let d = Deployments {
        deployments: weights
            .iter()
            .enumerate()
            .map(|(i, w)| Listed {
                agent: Some(format!("d{i}")),
                model: None,
                weight: Some(*w),
            })
            .collect(),
        strategy,
        cooldown: Some(Wait::Seconds(cooldown)),
        retries: None,
        deadline: None,
    };
    Arc::new(Router::new("pool", &d))
}

fn none_tried(r: &Router) -> Vec<bool> {
    vec![false; r.deployments.len()]
}

fn rate_limited(retry_after: Option<u64>) -> Error {
    Error::provider("p: HTTP 429")
        .with_upstream_status(429)
        .with_retry_after(retry_after.map(Duration::from_secs))
}

#[test]
fn weighted_draws_fall_on_each_deployment_in_proportion_to_its_weight() {
    let r = router(Strategy::Weighted, &[3, 1], 30.0);
    let now = Instant::now();
    let mut counts = [0; 2];
    for k in 0..200 {
        let lease = r
            .choose(&none_tried(&r), now, f64::from(k) / 200.0)
            .unwrap();
        counts[lease.index] += 1;
    }
    assert_eq!(counts, [150, 50]);
    // A draw at either end stays on a deployment.
    assert_eq!(weighted(&[0, 1], |_| 1.0, 0.0), 0);
    assert_eq!(weighted(&[0, 1], |_| 1.0, 1.0), 1);
    // Only those ready are drawn from.
    assert_eq!(weighted(&[1], |_| 1.0, 0.0), 1);
}

#[test]
fn least_busy_sends_to_the_idle_deployment_and_counts_in_flight_per_weight() {
    let r = router(Strategy::LeastBusy, &[1, 1], 30.0);
    let now = Instant::now();
    let held = r.choose(&none_tried(&r), now, 0.0).unwrap();
    assert_eq!(held.index, 0, "of equals, the first listed");
    // While the first holds a request, the idle one takes the next, again and again.
    for _ in 0..3 {
        let lease = r.choose(&none_tried(&r), now, 0.0).unwrap();
        assert_eq!(lease.index, 1);
    }
    drop(held);
    // Both idle: the one chosen longest ago.
    assert_eq!(r.choose(&none_tried(&r), now, 0.0).unwrap().index, 0);

    // A deployment of weight 2 takes two in flight for the other's one.
    let r = router(Strategy::LeastBusy, &[2, 1], 30.0);
    let leases: Vec<Lease> = (0..6)
        .map(|_| r.choose(&none_tried(&r), now, 0.0).unwrap())
        .collect();
    let on_first = leases.iter().filter(|l| l.index == 0).count();
    assert_eq!(on_first, 4);
    assert_eq!(r.counters()[0].in_flight, 4);
    drop(leases);
    assert!(r.counters().iter().all(|c| c.in_flight == 0));
}

#[test]
fn lowest_latency_measures_each_then_prefers_the_lowest_moving_average() {
    let r = router(Strategy::LowestLatency, &[1, 1], 30.0);
    let t0 = Instant::now();
    // Neither measured: the first, then the other, so that each is measured.
    let a = r.choose(&none_tried(&r), t0, 0.0).unwrap();
    assert_eq!(a.index, 0);
    a.answering(t0 + Duration::from_millis(900));
    drop(a);
    let b = r.choose(&none_tried(&r), t0, 0.0).unwrap();
    assert_eq!(b.index, 1);
    b.answering(t0 + Duration::from_millis(100));
    drop(b);
    for _ in 0..2 {
        let l = r.choose(&none_tried(&r), t0, 0.0).unwrap();
        assert_eq!(l.index, 1, "its average is under the other's 0.9 s");
        // It slows down: 0.1 → 0.1 + 0.3 × (2.0 − 0.1) = 0.67 → 0.67 + 0.3 × 1.33 = 1.069.
        l.answering(t0 + Duration::from_secs(2));
    }
    let latency = |i: usize| r.seen().1[i].latency.unwrap();
    assert!((latency(1) - 1.069).abs() < 1e-9, "{}", latency(1));
    assert_eq!(r.choose(&none_tried(&r), t0, 0.0).unwrap().index, 0);
}

#[test]
fn a_failed_deployment_cools_down_for_the_longer_of_its_cooldown_and_retry_after() {
    let r = router(Strategy::LeastBusy, &[1, 1], 30.0);
    let t0 = Instant::now();
    let secs = Duration::from_secs;

    // Retry-After shorter than the cooldown: the cooldown.
    r.choose(&none_tried(&r), t0, 0.0)
        .unwrap()
        .failed(&rate_limited(Some(5)), t0);
    // Skipped while it cools, whatever the strategy prefers.
    for _ in 0..2 {
        assert_eq!(r.choose(&none_tried(&r), t0, 0.0).unwrap().index, 1);
    }
    // Retry-After longer than the cooldown: Retry-After.
    r.choose(&[true, false], t0, 0.0)
        .unwrap()
        .failed(&rate_limited(Some(90)), t0);
    // Both cool: none is chosen, and the first is back when its cooldown ends.
    assert_eq!(
        r.choose(&none_tried(&r), t0 + secs(10), 0.0).unwrap_err(),
        NoDeployment::Cooling(secs(20))
    );
    let back = r.choose(&none_tried(&r), t0 + secs(30), 0.0).unwrap();
    assert_eq!(back.index, 0);
    drop(back);
    assert_eq!(
        r.choose(&[true, false], t0 + secs(31), 0.0).unwrap_err(),
        NoDeployment::Cooling(secs(59))
    );
    assert_eq!(
        r.choose(&[false, true], t0 + secs(90), 0.0).unwrap().index,
        0
    );
    assert_eq!(
        r.choose(&[true, true], t0 + secs(90), 0.0).unwrap_err(),
        NoDeployment::AllTried
    );

    // A cooldown of 0 leaves a failed deployment in, unless its provider asked for a wait.
    let r = router(Strategy::LeastBusy, &[1, 1], 0.0);
    r.choose(&none_tried(&r), t0, 0.0).unwrap().failed(
        &Error::provider("p: HTTP 500").with_upstream_status(500),
        t0,
    );
    assert_eq!(r.choose(&[false, true], t0, 0.0).unwrap().index, 0);
    r.choose(&[false, true], t0, 0.0)
        .unwrap()
        .failed(&rate_limited(Some(1)), t0);
    assert_eq!(
        r.choose(&[false, true], t0, 0.0).unwrap_err(),
        NoDeployment::Cooling(secs(1))
    );
}

#[test]
fn counters_say_each_deployments_tries_retries_and_cooldowns() {
    let r = router(Strategy::LeastBusy, &[1, 1], 30.0);
    let t0 = Instant::now();
    let first = r.choose(&none_tried(&r), t0, 0.0).unwrap();
    first.failed(&rate_limited(None), t0);
    drop(first);
    let retry = r.choose(&[true, false], t0, 0.0).unwrap();
    let c = r.counters();
    assert_eq!(
        (c[0].deployment.as_str(), c[0].counters, c[0].in_flight),
        (
            "d0",
            Counters {
                tries: 1,
                retries: 0,
                cooldowns: 1
            },
            0
        )
    );
    assert_eq!(
        (c[1].counters, c[1].in_flight),
        (
            Counters {
                tries: 1,
                retries: 1,
                cooldowns: 0
            },
            1
        )
    );
    assert!(c.iter().all(|c| c.model == "pool"));
    drop(retry);
    let routes = Routes([("pool".to_string(), r)].into_iter().collect());
    assert_eq!(routes.counters().len(), 2);
    assert!(routes.get("pool").is_some() && routes.get("other").is_none());
}
