//! `deploy/`: the Kubernetes manifests, the HAProxy configurations and the Containerfile
//! agree with one another and with `runbox mcp --help`; each committed haproxy.cfg is what
//! `deploy/haproxy/generate` prints for the command in its header, and HAProxy accepts it.
//! Fast and offline, but for installing HAProxy with apt-get when it is missing (said,
//! never skipped).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;
use serde_yaml::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    let path = repo().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------------------------------
// The manifests, as kustomize would assemble them.

/// The objects of deploy/kubernetes/kustomization.yaml's resources, and the ConfigMaps its
/// generator makes (name -> key -> content).
struct Manifests {
    objects: Vec<Value>,
    config_maps: BTreeMap<String, BTreeMap<String, String>>,
}

fn yaml_documents(path: &str) -> Vec<Value> {
    let source = read(path);
    serde_yaml::Deserializer::from_str(&source)
        .map(|doc| {
            Value::deserialize(doc).unwrap_or_else(|e| panic!("{path} is not valid YAML: {e}"))
        })
        .filter(|doc| !doc.is_null())
        .collect()
}

fn manifests() -> Manifests {
    let dir = "deploy/kubernetes";
    let kustomization = yaml_documents(&format!("{dir}/kustomization.yaml"));
    let kustomization = &kustomization[0];
    let objects = seq(&kustomization["resources"])
        .iter()
        .flat_map(|r| yaml_documents(&format!("{dir}/{}", s(r))))
        .collect();
    let mut config_maps = BTreeMap::new();
    for generator in seq(&kustomization["configMapGenerator"]) {
        let mut data = BTreeMap::new();
        for file in seq(&generator["files"]) {
            let (key, path) = match s(file).split_once('=') {
                Some((key, path)) => (key.to_string(), path.to_string()),
                None => (file_name(s(file)), s(file).to_string()),
            };
            data.insert(key, read(&format!("{dir}/{path}")));
        }
        config_maps.insert(s(&generator["name"]).to_string(), data);
    }
    Manifests {
        objects,
        config_maps,
    }
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

impl Manifests {
    fn object(&self, kind: &str, name: &str) -> &Value {
        self.objects
            .iter()
            .find(|o| s(&o["kind"]) == kind && s(&o["metadata"]["name"]) == name)
            .unwrap_or_else(|| panic!("deploy/kubernetes has no {kind} `{name}`"))
    }

    fn all(&self, kind: &str) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|o| s(&o["kind"]) == kind)
            .collect()
    }

    /// The one object of `kind` whose selector picks the pods labelled `labels`.
    fn selecting(&self, kind: &str, labels: &Value) -> &Value {
        let found: Vec<_> = self
            .all(kind)
            .into_iter()
            .filter(|o| {
                let selector = &o["spec"]["selector"];
                let selector = match selector.get("matchLabels") {
                    Some(m) => m,
                    None => selector,
                };
                selects(selector, labels)
            })
            .collect();
        assert_eq!(
            found.len(),
            1,
            "one {kind} selects pods labelled {labels:?}"
        );
        found[0]
    }
}

fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, found {v:?}"))
}

fn n(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("expected a number, found {v:?}"))
}

fn seq(v: &Value) -> &Vec<Value> {
    v.as_sequence()
        .unwrap_or_else(|| panic!("expected a list, found {v:?}"))
}

/// Whether every label `selector` asks for is on `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(selector) = selector.as_mapping() else {
        return false;
    };
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The container's port that `port` (a number, or a port's name) is.
fn container_port(container: &Value, port: &Value) -> u64 {
    match port {
        Value::Number(_) => n(port),
        _ => seq(&container["ports"])
            .iter()
            .find(|p| p["name"].as_str() == Some(s(port)))
            .map(|p| n(&p["containerPort"]))
            .unwrap_or_else(|| panic!("container has no port named {port:?}")),
    }
}

fn only_container(workload: &Value) -> &Value {
    let containers = seq(&workload["spec"]["template"]["spec"]["containers"]);
    assert_eq!(containers.len(), 1, "{:?}", workload["metadata"]["name"]);
    &containers[0]
}

fn args(container: &Value) -> Vec<String> {
    container
        .get("args")
        .map(|a| seq(a).iter().map(|a| s(a).to_string()).collect())
        .unwrap_or_default()
}

/// The value of `--flag=VALUE` or `--flag VALUE` among `args`.
fn flag(args: &[String], flag: &str) -> Option<String> {
    args.iter().enumerate().find_map(|(i, a)| {
        if let Some(value) = a.strip_prefix(&format!("{flag}=")) {
            Some(value.to_string())
        } else if a == flag {
            args.get(i + 1).cloned()
        } else {
            None
        }
    })
}

fn numeric_flag(args: &[String], name: &str) -> u64 {
    let value = flag(args, name).unwrap_or_else(|| panic!("the replicas' args set {name}"));
    value
        .parse()
        .unwrap_or_else(|_| panic!("{name}={value} is a number"))
}

/// A Kubernetes quantity of bytes, in MiB.
fn mib(quantity: &Value) -> u64 {
    let q = s(quantity);
    let (number, unit) = q.split_at(q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len()));
    let number: u64 = number.parse().unwrap();
    match unit {
        "Mi" => number,
        "Gi" => number * 1024,
        _ => panic!("quantity {q}: use Mi or Gi"),
    }
}

struct Replicas<'a> {
    set: &'a Value,
    service: &'a Value,
    container: &'a Value,
    port: u64,
}

fn replicas(m: &Manifests) -> Replicas<'_> {
    let set = m.object("StatefulSet", "runbox");
    let service = m.object("Service", s(&set["spec"]["serviceName"]));
    let container = only_container(set);
    let port = container_port(container, &Value::from("http"));
    Replicas {
        set,
        service,
        container,
        port,
    }
}

// ---------------------------------------------------------------------------------------
// HAProxy and the generator.

/// `haproxy -c` of a configuration, with the environment a pod gives it.
fn haproxy_check(path: &Path) -> Output {
    Command::new(crate::common::haproxy())
        .arg("-c")
        .arg("-f")
        .arg(path)
        .env("POD_NAMESPACE", "runbox")
        .output()
        .expect("run haproxy -c")
}

fn generate(args: &[&str]) -> Output {
    Command::new("sh")
        .arg("deploy/haproxy/generate")
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run deploy/haproxy/generate")
}

/// The command in a generated configuration's header.
fn header_command(config: &str) -> String {
    let mut lines = config.lines();
    assert!(
        lines.next().is_some_and(|l| l.ends_with("Generated by:")),
        "a generated configuration starts by saying so: {config:.200}"
    );
    let command = lines.next().unwrap_or_default();
    command
        .strip_prefix("#   ")
        .filter(|c| c.starts_with("deploy/haproxy/generate"))
        .unwrap_or_else(|| panic!("the second line is the command: {command}"))
        .to_string()
}

/// What the command in `config`'s header prints now.
fn regenerated(config: &str) -> String {
    let command = header_command(config);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("sh {command}"))
        .current_dir(repo())
        .output()
        .expect("run the header's command");
    assert!(out.status.success(), "{command}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// `server NAME ADDRESS` lines of each backend.
fn servers(config: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut backends: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = None;
    for line in config.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["backend", name, ..] => current = Some(name.to_string()),
            [section, ..] if !line.starts_with(' ') && !section.starts_with('#') => current = None,
            ["server", name, address, ..] => backends
                .entry(current.clone().expect("a server line inside a backend"))
                .or_default()
                .push((name.to_string(), address.trim_matches('"').to_string())),
            _ => {}
        }
    }
    backends
}

/// The health-check path of `backend`.
fn check_path(config: &str, backend: &str) -> String {
    let section: String = config
        .split("\nbackend ")
        .find(|b| b.starts_with(&format!("{backend}\n")))
        .unwrap_or_else(|| panic!("no backend {backend}"))
        .to_string();
    section
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("http-check send meth GET uri ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("backend {backend} has no http-check"))
}

fn bind_port(config: &str) -> u64 {
    let bind = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("bind "))
        .expect("a bind line");
    bind.rsplit(':').next().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------------------
// The Containerfile.

/// Its instructions, continuation lines joined and comments left out, by stage.
fn containerfile() -> Vec<Vec<(String, String)>> {
    let source = read("deploy/Containerfile");
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    let mut pending = String::new();
    for line in source.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && pending.is_empty()) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => {
                pending.push_str(start);
                pending.push(' ');
            }
            None => {
                pending.push_str(line);
                let whole = std::mem::take(&mut pending);
                let (instruction, rest) = whole.split_once(' ').unwrap_or((&whole, ""));
                let instruction = instruction.to_uppercase();
                if instruction == "FROM" {
                    stages.push(Vec::new());
                }
                stages
                    .last_mut()
                    .expect("FROM comes first")
                    .push((instruction, rest.trim().to_string()));
            }
        }
    }
    stages
}

fn instruction<'a>(stage: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    stage
        .iter()
        .filter(|(i, _)| i == name)
        .map(|(_, rest)| rest.as_str())
        .collect()
}

/// The final stage's ENTRYPOINT, an exec-form list.
fn entrypoint() -> Vec<String> {
    let stages = containerfile();
    let last = stages.last().unwrap();
    let entrypoint = instruction(last, "ENTRYPOINT");
    assert_eq!(entrypoint.len(), 1, "one ENTRYPOINT in the final stage");
    serde_json::from_str(entrypoint[0]).expect("ENTRYPOINT in exec form (a JSON list)")
}

/// The words after `runbox plugins fetch` in the build stage's RUN lines, up to `&&`.
fn plugins_fetch_args() -> Vec<String> {
    let stages = containerfile();
    let runs: Vec<&str> = stages
        .iter()
        .flat_map(|st| instruction(st, "RUN"))
        .collect();
    let run = runs
        .iter()
        .find(|r| r.contains("runbox plugins fetch"))
        .expect("a RUN of `runbox plugins fetch`");
    let after = run.split("runbox plugins fetch").nth(1).unwrap();
    after
        .split("&&")
        .next()
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_runbox"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run runbox --help");
    assert!(out.status.success(), "runbox {args:?} --help");
    text(&out.stdout)
}

/// The `--flags` a help text lists.
fn help_flags(help: &str) -> BTreeSet<String> {
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '[' || c == '=')
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string()
        })
        .collect()
}

/// The environment variables a help text lists (`[env: NAME=…]`, `[env: NAME]`).
fn help_variables(help: &str) -> BTreeSet<String> {
    help.split("[env: ")
        .skip(1)
        .map(|rest| rest.split(['=', ']']).next().unwrap().to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------

/// The StatefulSet, its headless Service, its probes, its disruption budget and the image
/// all speak of the same pods and the same port; the pod's name is the replica id; a pod
/// gets longer to stop than runbox takes to drain.
#[test]
fn the_replicas_service_probes_and_budget_agree() {
    let m = manifests();
    let r = replicas(&m);
    let spec = &r.set["spec"];
    let pod = &spec["template"];
    let labels = &pod["metadata"]["labels"];

    assert!(
        selects(&spec["selector"]["matchLabels"], labels),
        "the StatefulSet selects its own pods"
    );
    assert_eq!(s(&r.service["spec"]["clusterIP"]), "None", "headless");
    assert_eq!(
        r.service["spec"]["publishNotReadyAddresses"].as_bool(),
        Some(true),
        "a draining (not ready) replica keeps its DNS name: the balancer still reaches it"
    );
    assert!(
        selects(&r.service["spec"]["selector"], labels),
        "the headless Service selects the replicas"
    );
    for port in seq(&r.service["spec"]["ports"]) {
        assert_eq!(container_port(r.container, &port["targetPort"]), r.port);
    }

    let readiness = &r.container["readinessProbe"]["httpGet"];
    assert_eq!(s(&readiness["path"]), "/readyz");
    assert_eq!(container_port(r.container, &readiness["port"]), r.port);
    let liveness = &r.container["livenessProbe"]["httpGet"];
    assert_eq!(s(&liveness["path"]), "/healthz");
    assert_eq!(container_port(r.container, &liveness["port"]), r.port);

    let budget = m.selecting("PodDisruptionBudget", labels);
    assert_eq!(n(&budget["spec"]["maxUnavailable"]), 1);

    let id = seq(&r.container["env"])
        .iter()
        .find(|e| s(&e["name"]) == "RUNBOX_REPLICA_ID")
        .expect("RUNBOX_REPLICA_ID is set");
    assert_eq!(
        s(&id["valueFrom"]["fieldRef"]["fieldPath"]),
        "metadata.name",
        "the pod's name (runbox-N) is the replica id"
    );

    let args = args(r.container);
    let drain = flag(&args, "--drain-timeout").map_or(300, |v| v.parse().unwrap());
    let grace = n(&pod["spec"]["terminationGracePeriodSeconds"]);
    assert!(
        grace > drain,
        "terminationGracePeriodSeconds {grace} > --drain-timeout {drain}"
    );

    // The token is a file of a mounted Secret.
    let token = flag(&args, "--token-file").expect("--token-file");
    let mount = seq(&r.container["volumeMounts"])
        .iter()
        .find(|v| Path::new(&token).parent() == Some(Path::new(s(&v["mountPath"]))))
        .expect("the token file's directory is a volume");
    let volume = seq(&pod["spec"]["volumes"])
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    assert!(volume["secret"]["secretName"].is_string(), "{volume:?}");
    assert_eq!(mount["readOnly"].as_bool(), Some(true));

    // The image serves where the pods say.
    let entrypoint = entrypoint();
    let http = entrypoint
        .iter()
        .position(|a| a == "--http")
        .map(|i| entrypoint[i + 1].clone())
        .expect("the ENTRYPOINT serves HTTP");
    assert_eq!(http, format!("0.0.0.0:{}", r.port));
    let stages = containerfile();
    let last = stages.last().unwrap();
    assert_eq!(instruction(last, "EXPOSE"), [r.port.to_string()]);
    let user = instruction(last, "USER");
    assert!(
        user.len() == 1 && !user[0].starts_with("0") && !user[0].starts_with("root"),
        "the image runs as a user of its own: {user:?}"
    );
    let uid = n(&pod["spec"]["securityContext"]["runAsUser"]);
    assert!(
        user[0].starts_with(&format!("{uid}:")) || user[0] == uid.to_string(),
        "the pod runs as the image's user {user:?} (the owner of the compiled runtimes)"
    );
}

/// The container's resources follow from runbox's limits, as its comment works out:
/// every run at its memory cap at once fits in the server budget, the budget and the
/// process fit in the memory limit, and every scratch directory fits on its volume.
#[test]
fn the_replicas_resources_cover_runbox_s_limits() {
    let m = manifests();
    let r = replicas(&m);
    let args = args(r.container);
    let concurrent = numeric_flag(&args, "--max-concurrent");
    let run_mib = numeric_flag(&args, "--memory-mb");
    let retained_mib = numeric_flag(&args, "--retained-bytes") >> 20;
    let server_mib = numeric_flag(&args, "--server-memory-mb");
    let sessions = numeric_flag(&args, "--max-sessions");
    assert!(
        server_mib >= concurrent * run_mib + retained_mib,
        "--server-memory-mb {server_mib} holds {concurrent} runs of {run_mib} MiB and \
         {retained_mib} MiB of kept results"
    );
    let resources = &r.container["resources"];
    let limit = mib(&resources["limits"]["memory"]);
    assert!(
        limit >= server_mib + 512,
        "the memory limit {limit} MiB holds the server budget {server_mib} MiB and the process"
    );
    assert_eq!(
        mib(&resources["requests"]["memory"]),
        limit,
        "the memory a replica may use is reserved for it"
    );

    let scratch = flag(&args, "--scratch-dir").expect("--scratch-dir");
    let pod = &r.set["spec"]["template"]["spec"];
    let mount = seq(&r.container["volumeMounts"])
        .iter()
        .find(|v| s(&v["mountPath"]) == scratch)
        .expect("the scratch directory is a volume");
    let volume = seq(&pod["volumes"])
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let size = mib(&volume["emptyDir"]["sizeLimit"]);
    assert!(
        size >= (concurrent + sessions) * 256,
        "{size} MiB of scratch holds {concurrent} runs' and {sessions} sessions' 256 MiB"
    );
}

/// The balancer's configuration names every replica by its pod name, at its DNS name and
/// port, checks the probes' paths, and listens where its Deployment and Service say.
#[test]
fn the_balancer_points_at_every_replica() {
    let m = manifests();
    let r = replicas(&m);
    let balancer = m.object("Deployment", "runbox-haproxy");
    let container = only_container(balancer);
    let pod = &balancer["spec"]["template"];

    let volume = seq(&pod["spec"]["volumes"])
        .iter()
        .find(|v| v.get("configMap").is_some())
        .expect("the configuration is a ConfigMap volume");
    let name = s(&volume["configMap"]["name"]);
    let config = m
        .config_maps
        .get(name)
        .and_then(|data| data.get("haproxy.cfg"))
        .unwrap_or_else(|| panic!("kustomization.yaml makes ConfigMap {name} with haproxy.cfg"));
    let mount = seq(&container["volumeMounts"])
        .iter()
        .find(|v| v["name"] == volume["name"])
        .unwrap();
    assert_eq!(
        s(&mount["mountPath"]),
        "/usr/local/etc/haproxy",
        "where the haproxy image reads haproxy.cfg"
    );

    let set_name = s(&r.set["metadata"]["name"]);
    let service = s(&r.service["metadata"]["name"]);
    let count = n(&r.set["spec"]["replicas"]);
    let expected: Vec<(String, String)> = (0..count)
        .map(|i| {
            (
                format!("{set_name}-{i}"),
                format!(
                    "{set_name}-{i}.{service}.${{POD_NAMESPACE}}.svc.cluster.local:{}",
                    r.port
                ),
            )
        })
        .collect();
    let backends = servers(config);
    assert_eq!(
        backends.keys().collect::<Vec<_>>(),
        ["runbox", "runbox-owner"]
    );
    for (backend, servers) in &backends {
        assert_eq!(servers, &expected, "backend {backend}");
    }
    let namespace = seq(&container["env"])
        .iter()
        .find(|e| s(&e["name"]) == "POD_NAMESPACE")
        .expect("POD_NAMESPACE, which the server addresses name");
    assert_eq!(
        s(&namespace["valueFrom"]["fieldRef"]["fieldPath"]),
        "metadata.namespace"
    );
    assert_eq!(
        check_path(config, "runbox"),
        s(&r.container["readinessProbe"]["httpGet"]["path"])
    );
    assert_eq!(
        check_path(config, "runbox-owner"),
        s(&r.container["livenessProbe"]["httpGet"]["path"])
    );

    let listen = bind_port(config);
    assert_eq!(container_port(container, &Value::from("http")), listen);
    let front = m.selecting("Service", &pod["metadata"]["labels"]);
    for port in seq(&front["spec"]["ports"]) {
        assert_eq!(container_port(container, &port["targetPort"]), listen);
    }
    assert!(selects(
        &balancer["spec"]["selector"]["matchLabels"],
        &pod["metadata"]["labels"]
    ));
    m.selecting("PodDisruptionBudget", &pod["metadata"]["labels"]);

    // The runtime API's socket is in a writable volume (the root filesystem is not).
    let socket = config
        .lines()
        .find_map(|l| l.trim().strip_prefix("stats socket "))
        .and_then(|l| l.split_whitespace().next())
        .expect("a stats socket");
    assert!(
        seq(&container["volumeMounts"])
            .iter()
            .any(|v| Path::new(socket).parent() == Some(Path::new(s(&v["mountPath"])))),
        "{socket} is in a mounted volume"
    );
}

/// Both committed configurations are exactly what the generator prints for the command
/// in their header; the worked example's command is the documented one.
#[test]
fn the_configurations_are_what_the_generator_prints() {
    let example = read("deploy/haproxy/haproxy.cfg");
    assert_eq!(
        header_command(&example),
        "deploy/haproxy/generate --listen 127.0.0.1:8080 \
         r0=127.0.0.1:8101 r1=127.0.0.1:8102 r2=127.0.0.1:8103"
    );
    assert!(
        example == regenerated(&example),
        "deploy/haproxy/haproxy.cfg differs from what its command prints: run it again"
    );
    let m = manifests();
    for (name, data) in &m.config_maps {
        let config = &data["haproxy.cfg"];
        assert!(
            *config == regenerated(config),
            "ConfigMap {name}'s haproxy.cfg differs from what its command prints: run it again"
        );
    }
    assert!(!m.config_maps.is_empty());
}

/// `haproxy -c` accepts both configurations (HAProxy is installed when missing).
#[test]
fn haproxy_accepts_the_configurations() {
    for path in [
        "deploy/haproxy/haproxy.cfg",
        "deploy/kubernetes/haproxy.cfg",
    ] {
        let out = haproxy_check(&repo().join(path));
        assert!(
            out.status.success(),
            "haproxy -c -f {path}:\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
}

/// The generator prints its usage, refuses what runbox would refuse as a replica id, and
/// what HAProxy would misread, saying why; what it prints for any replicas is valid.
#[test]
fn the_generator_explains_and_refuses() {
    let out = generate(&["--help"]);
    assert!(out.status.success());
    assert!(text(&out.stdout).starts_with("Usage: deploy/haproxy/generate"));

    for (args, says) in [
        (&["R0=127.0.0.1:1"][..], "cannot be a replica id"),
        (&["a_b=127.0.0.1:1"], "cannot be a replica id"),
        (&["=127.0.0.1:1"], "cannot be a replica id"),
        (
            &["abcdefghijklmnopqrstuvwxyz0123456=127.0.0.1:1"],
            "cannot be a replica id",
        ),
        (&["r0=127.0.0.1:1", "r0=127.0.0.1:2"], "given twice"),
        (&["r0=127.0.0.1"], "is not HOST:PORT"),
        (&["r0=127.0.0.1:http"], "is not a port"),
        (&["r0=bad host:1"], "would misread"),
        (&[], "at least one replica"),
        (
            &["--check-interval", "0", "r0=127.0.0.1:1"],
            "--check-interval",
        ),
        (&["--listen"], "needs a value"),
        (&["--frobnicate", "r0=127.0.0.1:1"], "unknown option"),
    ] {
        let out = generate(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }

    // A 32-character id, one replica, every option: valid.
    let id = "abcdefghijklmnopqrstuvwxyz012345";
    let dir = tempfile::tempdir().unwrap();
    let out = generate(&[
        "--listen=127.0.0.1:18080",
        "--admin-socket",
        &dir.path().join("admin.sock").to_string_lossy(),
        "--check-interval",
        "1000",
        "--call-timeout",
        "600",
        "--dns",
        &format!("{id}=localhost:1"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = text(&out.stdout);
    assert!(config.contains(&format!("server {id} localhost:1 check inter 1000")));
    assert!(config.contains("timeout server 600s"));
    let path = dir.path().join("haproxy.cfg");
    std::fs::write(&path, &config).unwrap();
    let check = haproxy_check(&path);
    assert!(check.status.success(), "{}", text(&check.stderr));
}

/// Every flag the manifests and the Containerfile give runbox, and every RUNBOX_*
/// variable they set, is one its `--help` lists. (`--drain-timeout` and
/// `RUNBOX_REPLICA_ID` come with the scale-out change of `runbox mcp`.)
#[test]
fn every_flag_and_variable_is_one_runbox_lists() {
    let mcp_help = help(&["mcp"]);
    let fetch_help = help(&["plugins", "fetch"]);
    let mut missing = Vec::new();

    let m = manifests();
    let r = replicas(&m);
    let entrypoint = entrypoint();
    assert_eq!(
        entrypoint[..2],
        ["runbox".to_string(), "mcp".to_string()],
        "the image runs `runbox mcp`"
    );
    let mcp_flags = help_flags(&mcp_help);
    assert!(mcp_flags.contains("--http") && mcp_flags.contains("--max-concurrent"));
    for arg in args(r.container).iter().chain(&entrypoint[2..]) {
        if let Some(name) = arg.strip_prefix("--").map(|a| a.split('=').next().unwrap()) {
            if !mcp_flags.contains(&format!("--{name}")) {
                missing.push(format!("--{name} (runbox mcp)"));
            }
        }
    }
    let fetch_flags = help_flags(&fetch_help);
    for arg in plugins_fetch_args() {
        if arg.starts_with("--") && !fetch_flags.contains(arg.split('=').next().unwrap()) {
            missing.push(format!("{arg} (runbox plugins fetch)"));
        }
    }

    let mut variables: BTreeSet<String> = seq(&r.container["env"])
        .iter()
        .map(|e| s(&e["name"]).to_string())
        .collect();
    for stage in containerfile() {
        for env in instruction(&stage, "ENV") {
            variables.insert(env.split(['=', ' ']).next().unwrap().to_string());
        }
    }
    let listed = help_variables(&mcp_help);
    assert!(listed.contains("RUNBOX_HTTP") && listed.contains("RUNBOX_TOKEN"));
    for variable in variables.iter().filter(|v| v.starts_with("RUNBOX_")) {
        if !listed.contains(variable) {
            missing.push(format!("{variable} (runbox mcp)"));
        }
    }
    assert!(
        missing.is_empty(),
        "deploy/ gives runbox what its --help does not list: {missing:?}"
    );
}

/// The replicas share one session store: a ReadWriteMany claim mounted where every
/// replica's `--session-store` points, so a session moves when its pod goes.
#[test]
fn replicas_share_a_session_store_on_a_read_write_many_volume() {
    let m = manifests();
    let r = replicas(&m);
    let args = args(r.container);
    let dir = flag(&args, "--session-store").expect("--session-store");
    let mount = seq(&r.container["volumeMounts"])
        .iter()
        .find(|v| s(&v["mountPath"]) == dir)
        .expect("the session store is a mounted volume");
    assert_ne!(mount["readOnly"].as_bool(), Some(true), "{mount:?}");
    let volume = seq(&r.set["spec"]["template"]["spec"]["volumes"])
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap();
    let claim = s(&volume["persistentVolumeClaim"]["claimName"]);
    let claim = m.object("PersistentVolumeClaim", claim);
    let modes: Vec<&str> = seq(&claim["spec"]["accessModes"]).iter().map(s).collect();
    assert_eq!(modes, ["ReadWriteMany"], "every replica mounts it at once");
}

/// deploy/README.md says what a cluster needs changed: the claim's `ReadWriteMany` without
/// a storage class (a default class of block disks leaves it Pending; the per-replica
/// alternative's `volumeClaimTemplates` snippet is valid and names the mount the
/// container uses), and the image's local name (the kustomization's `images:` example
/// names the image the StatefulSet uses).
#[test]
fn the_kubernetes_docs_say_what_a_cluster_must_change() {
    let m = manifests();
    let r = replicas(&m);
    let doc = read("deploy/README.md");
    let kubernetes = &doc[doc.find("## Kubernetes").unwrap()..];

    let image = s(&r.container["image"]);
    let (name, _) = image.split_once(':').unwrap_or((image, ""));
    assert!(kubernetes.contains(&format!("`image: {image}`")), "{image}");
    assert!(
        kubernetes.contains(&format!("kustomize edit set image {name}=")),
        "how to name the pushed image"
    );
    assert!(
        read("deploy/kubernetes/kustomization.yaml").contains(&format!("#   - name: {name}\n")),
        "kustomization.yaml's images: example names {name}"
    );

    let claim = m.object("PersistentVolumeClaim", "runbox-sessions");
    assert!(
        claim["spec"]["storageClassName"].is_null(),
        "the claim names a class now: say so in deploy/README.md"
    );
    for words in [
        "ReadWriteMany",
        "`storageClassName`",
        "`Pending`",
        "`ReadWriteOnce`",
    ] {
        assert!(kubernetes.contains(words), "deploy/README.md: {words}");
    }
    let snippet = &kubernetes[kubernetes.find("```yaml\n").expect("a yaml snippet") + 8..];
    let snippet = &snippet[..snippet.find("```").unwrap()];
    let snippet: Value = serde_yaml::from_str(snippet).expect("the snippet is YAML");
    let template = &seq(&snippet["volumeClaimTemplates"])[0];
    let mount = flag(&args(r.container), "--session-store").unwrap();
    let mounted = seq(&r.container["volumeMounts"])
        .iter()
        .find(|v| s(&v["mountPath"]) == mount)
        .unwrap();
    assert_eq!(template["metadata"]["name"], mounted["name"]);
    let modes: Vec<&str> = seq(&template["spec"]["accessModes"])
        .iter()
        .map(s)
        .collect();
    assert_eq!(modes, ["ReadWriteOnce"]);
    assert_eq!(
        template["spec"]["resources"], claim["spec"]["resources"],
        "the same size as the shared claim"
    );
}

/// `deploy/release` packs a given binary (without running rustc) into an archive whose
/// checksum holds, which ships deploy/ and every file its documents link to, and whose
/// runbox runs a program (with this cache, so nothing is fetched again). The glibc the
/// binary needs is no newer than the one docs/install.md names.
#[test]
fn the_release_archive_unpacks_to_a_working_runbox() {
    // A rustc that fails and says so: given a binary, the script needs no Rust.
    let fake = FailingPrograms::new(&["rustc"]);
    let out = Command::new("sh")
        .arg(repo().join("deploy/release"))
        .env("RUNBOX_RELEASE_BINARY", env!("CARGO_BIN_EXE_runbox"))
        .env("PATH", fake.path())
        .output()
        .expect("run deploy/release");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fake.ran(),
        "",
        "deploy/release ran rustc although given a binary"
    );
    let archive = PathBuf::from(text(&out.stdout).trim());
    let archive = repo().join(archive);
    let dir = archive.parent().unwrap();
    let name = archive.file_name().unwrap().to_str().unwrap();
    assert!(name.contains(std::env::consts::ARCH), "{name}");
    let check = Command::new("sha256sum")
        .args(["-c", &format!("{name}.sha256")])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check.stdout));
    let (_unpacked, top) = unpack(&archive);
    for file in [
        "runbox",
        "README.md",
        "SECURITY.md",
        "LICENSE",
        "THIRD_PARTY.md",
        "docs/mcp.md",
        "docs/install.md",
        "docs/clients.md",
        "deploy/README.md",
        "deploy/Containerfile",
        "deploy/kubernetes/runbox.yaml",
    ] {
        assert!(top.join(file).is_file(), "{file} missing from the archive");
    }
    // Every relative link of every document in the archive names a file in it.
    let mut documents = vec![top.clone()];
    let mut links = 0;
    while let Some(path) = documents.pop() {
        if path.is_dir() {
            documents.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let doc = std::fs::read_to_string(&path).unwrap();
        for (i, _) in doc.match_indices("](") {
            let target = &doc[i + 2..];
            let target = &target[..target.find(')').unwrap_or(0)];
            let target = target.split('#').next().unwrap_or_default();
            if target.is_empty() || target.contains("://") || target.contains('{') {
                continue;
            }
            links += 1;
            let resolved = path.parent().unwrap().join(target);
            assert!(
                resolved.exists(),
                "{} links to {target}, which the archive does not hold",
                path.strip_prefix(&top).unwrap().display()
            );
        }
    }
    assert!(links >= 10, "only {links} links found");

    // The glibc the binary asks for at most is the one docs/install.md says it needs.
    let binary = std::fs::read(top.join("runbox")).unwrap();
    let needed = (0..binary.len().saturating_sub(8))
        .filter(|&i| binary[i..].starts_with(b"GLIBC_2."))
        .filter_map(|i| {
            let digits: Vec<u8> = binary[i + 8..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .copied()
                .collect();
            String::from_utf8(digits).ok()?.parse::<u32>().ok()
        })
        .max();
    let install = read("docs/install.md");
    let documented = install
        .find("glibc 2.")
        .map(|i| {
            install[i + 8..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse::<u32>()
                .unwrap()
        })
        .expect("docs/install.md names the glibc the archive needs");
    if let Some(needed) = needed {
        assert!(
            needed <= documented,
            "the binary needs glibc 2.{needed}, docs/install.md says 2.{documented}"
        );
    }
    assert!(read("deploy/release").contains(&format!("2.{documented}")));

    let mut run = Command::new(top.join("runbox"));
    run.args(["--quiet", "run", "python", "-"])
        .env("RUNBOX_CACHE_DIR", crate::common::cache_dir());
    let ran = crate::common::output_with_stdin(&mut run, "print(6 * 7)");
    assert_eq!(text(&ran.stdout), "42\n", "{}", text(&ran.stderr));
}

/// `deploy/release --offline quickjs` ships quickjs's artifact beside the binary, and the
/// unpacked runbox runs quickjs on an empty cache with npm and pip failing (and saying
/// so if ever run): the bundle stands in for them.
#[test]
fn the_offline_archive_needs_neither_npm_nor_pip() {
    let fake = FailingPrograms::new(&["npm", "pip", "pip3", "python3"]);
    let out = Command::new("sh")
        .args([
            repo().join("deploy/release").to_str().unwrap(),
            "--offline",
            "quickjs",
        ])
        .env("RUNBOX_RELEASE_BINARY", env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", crate::common::cache_dir())
        .output()
        .expect("run deploy/release --offline");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("bundled 1 artifacts"),
        "{}",
        text(&out.stderr)
    );
    let archive = repo().join(text(&out.stdout).trim());
    let name = archive.file_name().unwrap().to_str().unwrap();
    assert!(name.ends_with("-offline.tar.gz"), "{name}");
    let (_unpacked, top) = unpack(&archive);
    std::fs::remove_file(&archive).unwrap();
    assert_eq!(std::fs::read_dir(top.join("artifacts")).unwrap().count(), 1);

    let empty_cache = tempfile::tempdir().unwrap();
    let mut run = Command::new(top.join("runbox"));
    run.args(["--quiet", "run", "quickjs", "-"])
        .env("RUNBOX_CACHE_DIR", empty_cache.path())
        .env("PATH", fake.path());
    let ran = crate::common::output_with_stdin(&mut run, "console.log(6 * 7)");
    assert_eq!(text(&ran.stdout), "42\n", "{}", text(&ran.stderr));
    assert_eq!(fake.ran(), "", "npm or pip was run");
}

/// Programs that fail at once, each writing its name to a list first, in a directory put
/// before the rest of PATH: a test sees whether a script ran one.
struct FailingPrograms {
    dir: tempfile::TempDir,
}

impl FailingPrograms {
    fn new(names: &[&str]) -> FailingPrograms {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        for name in names {
            let path = dir.path().join(name);
            let script = format!("#!/bin/sh\necho {name} >> '{}'\nexit 1\n", ran.display());
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        FailingPrograms { dir }
    }

    /// PATH with these programs first.
    fn path(&self) -> std::ffi::OsString {
        let rest = std::env::var_os("PATH").unwrap_or_default();
        std::env::join_paths(
            std::iter::once(self.dir.path().to_path_buf()).chain(std::env::split_paths(&rest)),
        )
        .unwrap()
    }

    /// The names of those that ran, a line each.
    fn ran(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ran")).unwrap_or_default()
    }
}

/// `archive` (`NAME.tar.gz`) unpacked into a temporary directory, and its `NAME/` in it.
fn unpack(archive: &Path) -> (tempfile::TempDir, PathBuf) {
    let unpacked = tempfile::tempdir().unwrap();
    let tar = Command::new("tar")
        .arg("xzf")
        .arg(archive)
        .current_dir(unpacked.path())
        .status()
        .unwrap();
    assert!(tar.success());
    let name = archive.file_name().unwrap().to_str().unwrap();
    let top = unpacked.path().join(name.trim_end_matches(".tar.gz"));
    (unpacked, top)
}

/// Whether `program` is on the PATH.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// The library builds for a target without glibc: `cargo check --target
/// x86_64-unknown-linux-musl -p runbox --lib` (musl's `setrlimit` takes an `int`, as
/// macOS's does, not glibc's own type). It installs the target with rustup when it is
/// missing, and uses its own target directory (target/musl-check) so it never waits on
/// nor invalidates the release build. Costs about 2.5 minutes on 2 cores the first time
/// (every dependency checked), 10 to 60 s after a change to runbox.
#[test]
fn the_library_builds_without_glibc() {
    const TARGET: &str = "x86_64-unknown-linux-musl";
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .expect("rustup, to add the musl target");
    if !text(&installed.stdout).lines().any(|t| t.trim() == TARGET) {
        eprintln!("installing the {TARGET} target with rustup");
        let add = Command::new("rustup")
            .args(["target", "add", TARGET])
            .output()
            .unwrap();
        assert!(
            add.status.success(),
            "rustup target add {TARGET}: {}",
            text(&add.stderr)
        );
    }
    let mut check = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    check
        .args(["check", "--target", TARGET, "-p", "runbox", "--lib"])
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", repo().join("target/musl-check"));
    // zstd-sys compiles C; a check links nothing, so the host's compiler does when no musl
    // cross compiler is installed.
    if !on_path("x86_64-linux-musl-gcc") && !on_path("musl-gcc") {
        check
            .env("CC_x86_64_unknown_linux_musl", "cc")
            .env("AR_x86_64_unknown_linux_musl", "ar");
    }
    let out = check.output().expect("run cargo check");
    let log = text(&out.stderr);
    assert!(
        out.status.success(),
        "cargo check --target {TARGET}:\n{}",
        log.lines()
            .filter(|l| !l.trim_start().starts_with("Checking")
                && !l.trim_start().starts_with("Compiling"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
