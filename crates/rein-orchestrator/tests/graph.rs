//! A graph that cannot run is refused before anything runs, with the task
//! and the path in the message.

use std::time::Duration;

use rein_orchestrator::{FailurePolicy, GraphSpec, TaskSpec};
use rein_wire::error::codes;

fn refused(spec: GraphSpec) -> String {
    match spec.check() {
        Ok(_) => panic!("the graph was accepted"),
        Err(err) => {
            assert_eq!(err.code, codes::GRAPH_INVALID, "{err:?}");
            err.message
        }
    }
}

fn graph(tasks: Vec<TaskSpec>) -> GraphSpec {
    GraphSpec {
        tasks,
        ..GraphSpec::default()
    }
}

#[test]
fn a_cycle_is_refused_with_its_path() {
    let message = refused(graph(vec![
        TaskSpec::new("plan", "p"),
        TaskSpec::new("a", "a").after(&["plan", "c"]),
        TaskSpec::new("b", "b").after(&["a"]),
        TaskSpec::new("c", "c").after(&["b"]),
    ]));
    // The path round the circle, each task once and the first again.
    assert!(
        message.contains("a → b → c → a")
            || message.contains("b → c → a → b")
            || message.contains("c → a → b → c"),
        "{message}"
    );
    assert!(!message.contains("plan"), "{message}");
    // A task that depends on itself.
    let message = refused(graph(vec![TaskSpec::new("x", "x").after(&["x"])]));
    assert!(message.contains("x → x"), "{message}");
}

#[test]
fn unknown_dependencies_and_outputs_are_refused() {
    let message = refused(graph(vec![TaskSpec::new("a", "a").after(&["ghost"])]));
    assert!(
        message.contains("`a`") && message.contains("`ghost`"),
        "{message}"
    );

    let message = refused(graph(vec![
        TaskSpec::new("a", "a").yields(&["notes"]),
        TaskSpec::new("b", "use {{a.summary}}").after(&["a"]),
    ]));
    assert!(
        message.contains("{{a.summary}}") && message.contains("no output `summary`"),
        "{message}"
    );

    let message = refused(graph(vec![TaskSpec::new("b", "use {{nobody.x}}")]));
    assert!(message.contains("no task `nobody`"), "{message}");

    // Referencing a task that is not a dependency: its output may not
    // exist yet when this one runs.
    let message = refused(graph(vec![
        TaskSpec::new("a", "a").yields(&["notes"]),
        TaskSpec::new("b", "use {{a.notes}}"),
    ]));
    assert!(message.contains("does not depend on `a`"), "{message}");

    // A transitive dependency is enough.
    graph(vec![
        TaskSpec::new("a", "a").yields(&["notes"]),
        TaskSpec::new("m", "m").after(&["a"]),
        TaskSpec::new("b", "use {{ a.notes }}").after(&["m"]),
    ])
    .check()
    .unwrap();
}

#[test]
fn ids_must_be_unique_and_plain_and_the_graph_not_empty() {
    let message = refused(graph(vec![
        TaskSpec::new("a", "1"),
        TaskSpec::new("a", "2"),
    ]));
    assert!(message.contains("two tasks are named `a`"), "{message}");
    let message = refused(graph(vec![TaskSpec::new("a b", "1")]));
    assert!(message.contains("not valid"), "{message}");
    let message = refused(graph(vec![]));
    assert!(message.contains("no tasks"), "{message}");
    let mut zero = graph(vec![TaskSpec::new("a", "1")]);
    zero.graph.max_parallel = 0;
    assert!(refused(zero).contains("max_parallel"));
}

#[test]
fn a_graph_file_reads_with_its_settings_and_refuses_unknown_fields() {
    let spec = GraphSpec::from_toml(
        r#"
        [graph]
        max_parallel = 2
        on_failure = "fail_graph"
        retries = 3
        timeout = "90s"
        backoff = "250ms"

        [[task]]
        id = "research"
        brief = "Find what is known."
        outputs = ["notes"]
        timeout = "5m"

        [[task]]
        id = "write"
        brief = "Write it up from {{research.notes}}."
        depends_on = ["research"]
        profile = "writer"
        retries = 0
        "#,
    )
    .unwrap();
    assert_eq!(spec.graph.max_parallel, 2);
    assert_eq!(spec.graph.on_failure, FailurePolicy::FailGraph);
    assert_eq!(spec.graph.timeout, Duration::from_secs(90));
    assert_eq!(spec.graph.backoff, Duration::from_millis(250));
    assert_eq!(spec.tasks[0].timeout, Some(Duration::from_secs(300)));
    assert_eq!(spec.tasks[1].retries, Some(0));
    let graph = spec.check().unwrap();
    assert_eq!(graph.tasks().len(), 2);

    // A typo is an error that names it, not a silently ignored field.
    let err = GraphSpec::from_toml("[[task]]\nid = \"a\"\nbrief = \"b\"\ndepend_on = [\"x\"]\n")
        .unwrap_err();
    assert_eq!(err.code, codes::GRAPH_INVALID);
    assert!(err.message.contains("depend_on"), "{}", err.message);
    let err = GraphSpec::from_toml("[[task]]\nid = \"a\"\nbrief = \"b\"\ntimeout = \"soon\"\n")
        .unwrap_err();
    assert!(err.message.contains("soon"), "{}", err.message);
}
