package main

// The real node: containerd, runc and a kubelet, so Pods really run. It follows one network
// rule without exception: every Pod that runs here uses the host's network, and every packet
// stays on 127.0.0.1. There is no pod network, CNI bridge, kube-proxy or iptables rule.
//
//   - The node is named localhost and registers 127.0.0.1 as its address, so the API server
//     reaches the kubelet (logs, exec) on loopback, through the egress proxy (egress.go).
//   - It carries the taint realNodeTaint. The admission policy nodePlacementPolicy gives
//     host-network Pods the toleration and pins them here; every other Pod is pinned to the
//     simulated kwok node, where it is reported running without a network it could not
//     have here (nothing waits in ContainerCreating for an address that never comes).
//   - Host-network Pods on it get KUBERNETES_SERVICE_HOST/PORT naming the API server on
//     127.0.0.1: the `kubernetes` Service address would route off the machine.
//   - containerd's CNI configuration is loopback only. It exists because CRI reports the
//     node's network not ready without one; host-network sandboxes never call it.

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	realNodeName  = "localhost"
	realNodeTaint = "olmv1-rs.io/real-node"
	// pauseImage is the sandbox image: built here from the pause program next to clusterctl
	// and imported into containerd, so nothing is pulled from a public registry.
	pauseImage = "localhost/olmv1-rs/pause:local"
)

// nodeRuntime is where the real node's programs are: containerd and runc from the host
// (hack/node-runtime installs them), kubelet from hack/build-tools, pause next to clusterctl.
type nodeRuntime struct {
	containerd, ctr, runc, cniBinDir, kubelet, pause string
}

func findNodeRuntime(binDir string) (nodeRuntime, error) {
	var rt nodeRuntime
	var missing []string
	look := func(dst *string, name string) {
		if p, err := exec.LookPath(name); err == nil {
			*dst = p
		} else {
			missing = append(missing, name)
		}
	}
	look(&rt.containerd, "containerd")
	look(&rt.ctr, "ctr")
	look(&rt.runc, "runc")
	for _, dir := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(dir, "loopback")); err == nil {
			rt.cniBinDir = dir
			break
		}
	}
	if rt.cniBinDir == "" {
		missing = append(missing, "the CNI loopback plugin")
	}
	rt.kubelet = filepath.Join(binDir, "kubelet")
	if _, err := os.Stat(rt.kubelet); err != nil {
		missing = append(missing, "kubelet in "+binDir)
	}
	if self, err := os.Executable(); err == nil {
		rt.pause = filepath.Join(filepath.Dir(self), "pause")
	}
	if _, err := os.Stat(rt.pause); err != nil {
		missing = append(missing, "pause next to clusterctl")
	}
	if len(missing) > 0 {
		return rt, fmt.Errorf("a real node needs %s (hack/node-runtime installs them)", strings.Join(missing, ", "))
	}
	return rt, nil
}

// startRealNode starts containerd and the kubelet and waits until the node is Ready and
// the placement policy admits Pods.
func (c *cluster) startRealNode(api *http.Client, apiURL string, deadline time.Time) error {
	if pid, ok := runningKubelet(); ok {
		return fmt.Errorf("a kubelet is already running on this host (pid %d), so no second real node can start: "+
			"kubelets share the host's pod cgroups and pod log directory, and each kills the containers of the other; "+
			"stop the other cluster first (hack/cluster down), or start this one without --real-node", pid)
	}
	rt, err := findNodeRuntime(c.binDir)
	if err != nil {
		return err
	}
	dir := c.path("node")
	for _, d := range []string{"containerd/root", "containerd/state", "cni", "kubelet", "kubelet-certs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	socket := filepath.Join(dir, "containerd", "containerd.sock")
	cni := filepath.Join(dir, "cni", "10-loopback.conflist")
	if err := os.WriteFile(cni, []byte(`{"cniVersion":"0.4.0","name":"loopback-only","plugins":[{"type":"loopback"}]}`), 0o600); err != nil {
		return err
	}
	config := filepath.Join(dir, "containerd", "config.toml")
	if err := os.WriteFile(config, []byte(containerdConfig(dir, socket, rt)), 0o600); err != nil {
		return err
	}
	if err := c.spawnBinary("containerd", rt.containerd, "--config="+config); err != nil {
		return err
	}
	if err := waitFor("containerd socket", deadline, c.alive("containerd"), func() error {
		conn, err := net.Dial("unix", socket)
		if err != nil {
			return err
		}
		return conn.Close()
	}); err != nil {
		return err
	}
	archive := filepath.Join(dir, "pause.tar")
	if err := writeImageArchive(archive, rt.pause, "/pause", pauseImage); err != nil {
		return fmt.Errorf("failed to build the pause image: %w", err)
	}
	if out, err := exec.Command(rt.ctr, "--address", socket, "--namespace", "k8s.io", "images", "import", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("failed to import the pause image into containerd: %v: %s", err, out)
	}

	kubeletConfig := filepath.Join(dir, "kubelet-config.yaml")
	if err := os.WriteFile(kubeletConfig, []byte(c.kubeletConfig(socket)), 0o600); err != nil {
		return err
	}
	if err := c.spawnBinary("kubelet", rt.kubelet,
		"--config="+kubeletConfig,
		"--kubeconfig="+c.path("kubeconfigs", "kubelet"),
		"--hostname-override="+realNodeName,
		"--node-ip=127.0.0.1",
		"--root-dir="+filepath.Join(dir, "kubelet"),
		"--cert-dir="+filepath.Join(dir, "kubelet-certs"),
		"--v=1",
	); err != nil {
		return err
	}
	if err := c.applyNodePlacementPolicy(api, apiURL); err != nil {
		return err
	}
	if err := waitFor("node "+realNodeName+" Ready (kubelet)", deadline, c.alive("kubelet"), func() error {
		return nodeReady(api, apiURL, realNodeName)
	}); err != nil {
		return err
	}
	return setNodeAddresses(api, apiURL)
}

// setNodeAddresses records the real node's loopback address. The kubelet refuses to report
// a loopback node IP itself ("nodeIP can't be loopback address") and then reports none, which
// leaves the API server no address for logs and exec, and host-network Pods no IP. The
// kubelet patches only what it changes, so the addresses set here stay.
func setNodeAddresses(api *http.Client, apiURL string) error {
	patch := `{"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": "` + realNodeName + `"}]}}`
	req, err := http.NewRequest(http.MethodPatch, apiURL+"/api/v1/nodes/"+realNodeName+"/status", strings.NewReader(patch))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	resp, err := api.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("failed to set the real node's address: %s: %.300s", resp.Status, body)
	}
	return nil
}

func containerdConfig(dir, socket string, rt nodeRuntime) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[ttrpc]
  address = "%s.ttrpc"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails to start.
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %q
`, filepath.Join(dir, "containerd", "root"), filepath.Join(dir, "containerd", "state"), socket, socket,
		pauseImage, rt.cniBinDir, filepath.Join(dir, "cni"), rt.runc)
}

func (c *cluster) kubeletConfig(socket string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
# This host mounts cgroup v1 hierarchies.
failCgroupV1: false
failSwapOn: false
# Secret and ConfigMap volumes are refreshed on a pod's sync: every 10 s instead of a minute,
# so a rotated webhook certificate reaches its server well inside the overlap a short test
# validity leaves (e2e/tests/real_node.rs).
syncFrequency: 10s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
registerWithTaints:
- key: %s
  value: "true"
  effect: NoSchedule
# A test machine's disk is shared with everything else: evict only when it is truly full.
evictionHard:
  memory.available: 100Mi
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
serializeImagePulls: false
resolvConf: /etc/resolv.conf
maxPods: 110
`, c.ports.Kubelet, c.ports.KubeletHealthz, socket, c.path("pki", "ca.crt"), realNodeTaint)
}

// nodePlacementPolicy places every Pod by whether it can run on the real node (see the file
// comment). Named with the cluster's API server port baked in, so it is rewritten per cluster.
func nodePlacementPolicy(apiPort int) string {
	return fmt.Sprintf(`{
  "apiVersion": "admissionregistration.k8s.io/v1",
  "kind": "MutatingAdmissionPolicy",
  "metadata": {"name": "olmv1-rs-local-node-placement"},
  "spec": {
    "failurePolicy": "Fail",
    "reinvocationPolicy": "Never",
    "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
    "mutations": [
      {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": %q}},
      {"patchType": "JSONPatch", "jsonPatch": {"expression": %q}}
    ]
  }
}`,
		// Host-network Pods are told where the API server is (env is a map list: merged).
		`!(has(object.spec.hostNetwork) && object.spec.hostNetwork) ? Object{} :
  Object{spec: Object.spec{containers: object.spec.containers.map(c, Object.spec.containers{name: c.name, env: [
    Object.spec.containers.env{name: "KUBERNETES_SERVICE_HOST", value: "127.0.0.1"},
    Object.spec.containers.env{name: "KUBERNETES_SERVICE_PORT", value: "`+strconv.Itoa(apiPort)+`"}]})}}`,
		// Node selector and tolerations are atomic: added to, not replaced. Host-network Pods
		// go to the real node (tolerating its taint); all others to the kwok node.
		`(has(object.spec.hostNetwork) && object.spec.hostNetwork
    ? [["kubernetes.io/hostname", "`+realNodeName+`"]] : [["type", "kwok"]]
  ).map(sel, has(object.spec.nodeSelector)
    ? JSONPatch{op: "add", path: "/spec/nodeSelector/" + jsonpatch.escapeKey(sel[0]), value: sel[1]}
    : JSONPatch{op: "add", path: "/spec/nodeSelector", value: {sel[0]: sel[1]}})
+ (!(has(object.spec.hostNetwork) && object.spec.hostNetwork) ? [] :
    has(object.spec.tolerations)
    ? [JSONPatch{op: "add", path: "/spec/tolerations/-", value: Object.spec.tolerations{key: "`+realNodeTaint+`", operator: "Exists", effect: "NoSchedule"}}]
    : [JSONPatch{op: "add", path: "/spec/tolerations", value: [Object.spec.tolerations{key: "`+realNodeTaint+`", operator: "Exists", effect: "NoSchedule"}]}])`)
}

func (c *cluster) applyNodePlacementPolicy(api *http.Client, apiURL string) error {
	binding := `{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
  "metadata": {"name": "olmv1-rs-local-node-placement"},
  "spec": {"policyName": "olmv1-rs-local-node-placement"}}`
	base := apiURL + "/apis/admissionregistration.k8s.io/v1/"
	for _, obj := range []struct{ url, body string }{
		{base + "mutatingadmissionpolicies", nodePlacementPolicy(c.ports.APIServer)},
		{base + "mutatingadmissionpolicybindings", binding},
	} {
		resp, err := api.Post(obj.url, "application/json", strings.NewReader(obj.body))
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("failed to create the node placement policy: %s: %s", resp.Status, msg)
		}
	}
	// A policy takes effect once the API server has loaded it: prove it on a dry-run Pod.
	probe := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "placement-probe"},
  "spec": {"hostNetwork": true, "containers": [{"name": "probe", "image": "` + pauseImage + `"}]}}`
	return waitFor("node placement policy", time.Now().Add(30*time.Second), func() bool { return true }, func() error {
		resp, err := api.Post(apiURL+"/api/v1/namespaces/default/pods?dryRun=All", "application/json", strings.NewReader(probe))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(body, []byte(realNodeTaint)) {
			return fmt.Errorf("not in effect yet: %s: %.300s", resp.Status, body)
		}
		return nil
	})
}

// writeImageArchive writes a one-layer image holding `binary` as `/<name>` in the archive
// format `ctr images import` reads (docker save's: manifest.json, config, layer).
func writeImageArchive(path, binary, entrypoint, ref string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	if err := lw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(entrypoint, "/"), Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := lw.Write(bin); err != nil {
		return err
	}
	if err := lw.Close(); err != nil {
		return err
	}
	diffID := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Entrypoint": []string{entrypoint}, "User": "65535:65535"},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(diffID[:])}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{ref}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, entry := range []struct {
		name string
		data []byte
	}{{"layer.tar", layer.Bytes()}, {"config.json", config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: entry.name, Mode: 0o644, Size: int64(len(entry.data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		if _, err := tw.Write(entry.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// stopTasks stops the kubelet (so it restarts nothing) and has containerd kill and delete
// every container, so each runc shim reaps its processes and exits. stopContainers is the
// fallback for what is left.
func (c *cluster) stopTasks() {
	pid, ok := c.pid("kubelet")
	if ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if _, still := c.pid("kubelet"); !still {
				break
			}
		}
	}
	if _, ok := c.pid("containerd"); !ok {
		return
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return
	}
	socket := c.path("node", "containerd", "containerd.sock")
	run := func(args ...string) ([]byte, error) {
		return exec.Command(ctr, append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...).Output()
	}
	out, err := run("tasks", "ls", "-q")
	if err != nil {
		return
	}
	tasks := strings.Fields(string(out))
	for _, id := range tasks {
		_, _ = run("tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range tasks {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if _, err := run("tasks", "delete", id); err == nil {
				break
			}
		}
	}
	if len(tasks) > 0 {
		c.logf("stopped %d containers", len(tasks))
	}
}

// stopContainers kills what containerd started for this node (the runc shims and every
// process under them) and unmounts whatever the kubelet and containerd mounted under the
// state directory, so `down` can remove it. Called after the kubelet and containerd stop.
func (c *cluster) stopContainers() {
	socket := c.path("node", "containerd", "containerd.sock")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	var shims []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(p + "/stat"); err == nil {
			// Field 4 is the parent pid; the command name (field 2) may hold spaces.
			if i := bytes.LastIndexByte(stat, ')'); i > 0 {
				fields := strings.Fields(string(stat[i+1:]))
				if len(fields) > 1 {
					if ppid, err := strconv.Atoi(fields[1]); err == nil {
						children[ppid] = append(children[ppid], pid)
					}
				}
			}
		}
		if cmdline, err := os.ReadFile(p + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte("containerd-shim")) && bytes.Contains(cmdline, []byte(socket)) {
			shims = append(shims, pid)
		}
	}
	var kill func(pid int)
	kill = func(pid int) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		for _, child := range children[pid] {
			kill(child)
		}
	}
	for _, shim := range shims {
		kill(shim)
	}
	if len(shims) > 0 {
		c.logf("killed %d container shims and their processes", len(shims))
		time.Sleep(200 * time.Millisecond)
	}
	c.unmountUnder(c.dir)
}

// unmountUnder detaches every mount below dir, deepest first.
func (c *cluster) unmountUnder(dir string) {
	raw, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			c.logf("unmount %s: %v", p, err)
		}
	}
}

// runningKubelet finds a kubelet process on this host, of any cluster or none.
func runningKubelet() (int, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "kubelet" {
			return pid, true
		}
	}
	return 0, false
}
