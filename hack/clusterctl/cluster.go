package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	serviceCIDR = "10.96.0.0/16"
	// serviceIP is the first address of serviceCIDR: the `kubernetes` Service.
	serviceIP = "10.96.0.1"
	nodeName  = "kwok-node-0"
	// simulatedNodeIP is the simulated node's InternalIP (see kwok's --node-ip below).
	simulatedNodeIP = "192.0.2.1"
)

// controlPlane are the components every cluster runs, in start order; `down` stops them in
// reverse. A cluster with a real node also runs containerd and the kubelet.
var controlPlane = []string{"etcd", "egress-proxy", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

var realNodeComponents = []string{"containerd", "kubelet"}

// cluster is one named control plane and its state directory.
type cluster struct {
	name   string
	dir    string
	binDir string
	ports  ports
	pki    *pki
	// realNode asks `up` for containerd and a kubelet beside the simulated node.
	realNode bool
	// exited has one channel per component started by this process, closed when it exits.
	exited map[string]chan struct{}
}

// ports are chosen free at start and recorded, so `status` and tests can find them.
type ports struct {
	Etcd              int `json:"etcd"`
	EtcdPeer          int `json:"etcdPeer"`
	APIServer         int `json:"apiServer"`
	ControllerManager int `json:"controllerManager"`
	Scheduler         int `json:"scheduler"`
	Kwok              int `json:"kwok"`
	Kubelet           int `json:"kubelet,omitempty"`
	KubeletHealthz    int `json:"kubeletHealthz,omitempty"`
}

// components are this cluster's processes in start order: recorded by `up`, so `down` and
// `status` stop and show what was started.
func (c *cluster) components() []string {
	var names []string
	if raw, err := os.ReadFile(c.path("components.json")); err == nil && json.Unmarshal(raw, &names) == nil {
		return names
	}
	if c.realNode {
		return append(append([]string{}, controlPlane...), realNodeComponents...)
	}
	return controlPlane
}

func (c *cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.dir}, parts...)...)
}

func (c *cluster) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[cluster %s] %s\n", c.name, fmt.Sprintf(format, args...))
}

// up starts the cluster, or returns the kubeconfig of one that is already running.
func (c *cluster) up(timeout time.Duration) (string, error) {
	kubeconfig := c.path("kubeconfig")
	if running := c.runningComponents(); len(running) == len(c.components()) && len(running) > 0 {
		c.logf("already running")
		return kubeconfig, nil
	} else if len(running) > 0 {
		return "", fmt.Errorf("cluster %q is partly running (%s): run `down` first", c.name, strings.Join(running, ", "))
	}
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
		if _, err := os.Stat(filepath.Join(c.binDir, bin)); err != nil {
			return "", fmt.Errorf("missing %s in %s (build it with hack/build-tools): %w", bin, c.binDir, err)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return "", err
	}
	for _, d := range []string{"logs", "pids", "etcd-data", "kubeconfigs"} {
		if err := os.MkdirAll(c.path(d), 0o700); err != nil {
			return "", err
		}
	}
	if err := writeJSON(c.path("components.json"), c.components()); err != nil {
		return "", err
	}
	started := time.Now()
	err := c.start(timeout)
	if err != nil {
		c.printLogs()
		if stopErr := c.stopAll(); stopErr != nil {
			c.logf("cleanup after failed start: %v", stopErr)
		}
		return "", err
	}
	nodes := "simulated node " + nodeName
	if c.realNode {
		nodes += " and real node " + realNodeName
	}
	c.logf("ready in %.1fs (apiserver https://127.0.0.1:%d; %s)", time.Since(started).Seconds(), c.ports.APIServer, nodes)
	return kubeconfig, nil
}

func (c *cluster) start(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	if c.ports, err = freePorts(); err != nil {
		return err
	}
	if err := writeJSON(c.path("ports.json"), c.ports); err != nil {
		return err
	}
	advertise, err := advertiseAddress()
	if err != nil {
		return err
	}
	if c.pki, err = newPKI(c.path("pki"), []net.IP{advertise}); err != nil {
		return err
	}
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.Etcd)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports.EtcdPeer)
	if err := c.spawn("etcd",
		"--name=node0",
		"--data-dir="+c.path("etcd-data"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=node0="+peerURL,
		// A throwaway test cluster: durability buys nothing and fsync dominates write latency.
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=4294967296",
		"--auto-compaction-retention=1",
		"--log-level=warn",
	); err != nil {
		return err
	}
	if err := waitFor("etcd", deadline, c.alive("etcd"), func() error {
		return httpCheck(http.DefaultClient, etcdURL+"/health", `"health":"true"`)
	}); err != nil {
		return err
	}

	pki := c.path("pki")
	if err := os.WriteFile(c.path("audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	// Every connection the API server opens to the cluster goes through the egress proxy,
	// which keeps it on 127.0.0.1 (egress.go).
	egressSocket := c.path("egress.sock")
	if err := os.WriteFile(c.path("egress.yaml"), []byte(egressConfig(egressSocket)), 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := c.spawnBinary("egress-proxy", self, "egress-proxy", "--name="+c.name, "--state-root="+filepath.Dir(c.dir), "--socket="+egressSocket); err != nil {
		return err
	}
	if err := c.spawn("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.ports.APIServer),
		// kube-apiserver derives the advertised address from the default route and refuses
		// loopback; name a real interface address so it also starts on hosts with no route.
		"--advertise-address="+advertise.String(),
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(pki, "sa.crt"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--allow-privileged=true",
		"--cert-dir="+c.path("apiserver-certs"),
		"--profiling=false",
		// Who sent which request, for the API request budgets of hack/process-budgets.
		"--audit-policy-file="+c.path("audit-policy.yaml"),
		"--audit-log-path="+c.path("audit.log"),
		"--audit-log-format=json",
		"--audit-log-mode=batch",
		"--audit-log-maxsize=512",
		"--audit-log-maxbackup=4",
		"--egress-selector-config-file="+c.path("egress.yaml"),
		// Logs and exec on the real node: the API server's own client identity, and the
		// node's loopback address.
		"--kubelet-client-certificate="+filepath.Join(pki, "kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(pki, "kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// Aggregated APIs (deppy-resolver's catalog API): the API server authenticates the
		// user, then forwards the request with the user in these headers, proving itself
		// with the front-proxy client certificate. It publishes this configuration in
		// kube-system/extension-apiserver-authentication, where aggregated servers read it.
		"--requestheader-client-ca-file="+filepath.Join(pki, "front-proxy-ca.crt"),
		"--requestheader-allowed-names="+frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+filepath.Join(pki, "front-proxy-client.crt"),
		"--proxy-client-key-file="+filepath.Join(pki, "front-proxy-client.key"),
	); err != nil {
		return err
	}
	// The others retry until the apiserver answers, so start them now rather than serially.
	for _, comp := range []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + c.path("kubeconfigs", "kube-controller-manager"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.ControllerManager),
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
			"--root-ca-file=" + filepath.Join(pki, "ca.crt"),
			"--service-account-private-key-file=" + filepath.Join(pki, "sa.key"),
			"--use-service-account-credentials=true",
			"--cluster-name=" + c.name,
			"--leader-elect=false",
			"--controllers=*",
			"--cert-dir=" + c.path("controller-manager-certs"),
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + c.path("kubeconfigs", "kube-scheduler"),
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.Scheduler),
			"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
			"--leader-elect=false",
			"--cert-dir=" + c.path("scheduler-certs"),
		}},
		{"kwok", []string{
			"--kubeconfig=" + c.path("kubeconfigs", "kwok"),
			"--config=" + filepath.Join(c.binDir, "kwok-stages.yaml"),
			// Only the simulated node: the real one has a kubelet.
			"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--server-address=127.0.0.1:" + strconv.Itoa(c.ports.Kwok),
			"--node-lease-duration-seconds=40",
			// The simulated node needs an address: a host-network Pod takes its node's
			// address as its own, and without one its Service has no endpoints, so a
			// webhook it serves never counts as ready. 192.0.2.1 is TEST-NET-1 (RFC 5737),
			// reserved for documentation and never routed; nothing dials it anyway, as the
			// egress proxy refuses every address that is not loopback.
			"--node-ip=" + simulatedNodeIP,
		}},
	} {
		if err := c.spawn(comp.name, comp.args...); err != nil {
			return err
		}
	}

	api, err := c.adminClient()
	if err != nil {
		return err
	}
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", c.ports.APIServer)
	if err := waitFor("kube-apiserver /readyz", deadline, c.alive("kube-apiserver"), func() error {
		return httpCheck(api, apiURL+"/readyz", "ok")
	}); err != nil {
		return err
	}
	if err := c.createNode(api, apiURL); err != nil {
		return err
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed health endpoints on loopback
	}}
	checks := []struct {
		what  string
		owner string
		check func() error
	}{
		{"kube-controller-manager /healthz", "kube-controller-manager", func() error {
			return httpCheck(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.ControllerManager), "ok")
		}},
		{"kube-scheduler /healthz", "kube-scheduler", func() error {
			return httpCheck(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.Scheduler), "ok")
		}},
		{"node " + nodeName + " Ready (kwok)", "kwok", func() error { return nodeReady(api, apiURL, nodeName) }},
		// Pods are refused in a namespace until its default ServiceAccount exists; waiting for
		// it here proves the controller manager runs and spares every test that race.
		{"default ServiceAccount", "kube-controller-manager", func() error {
			return httpCheck(api, apiURL+"/api/v1/namespaces/default/serviceaccounts/default", `"name":"default"`)
		}},
	}
	for _, chk := range checks {
		if err := waitFor(chk.what, deadline, c.alive(chk.owner), chk.check); err != nil {
			return err
		}
	}
	if c.realNode {
		return c.startRealNode(api, apiURL, deadline)
	}
	return nil
}

// spawn starts a component in its own session so it outlives this process, with its
// output in logs/<name>.log and its pid in pids/<name>.pid.
func (c *cluster) spawn(name string, args ...string) error {
	return c.spawnBinary(name, filepath.Join(c.binDir, name), args...)
}

// spawnBinary is spawn for a program that is not in the bin directory.
func (c *cluster) spawnBinary(name, binary string, args ...string) error {
	logFile, err := os.Create(c.path("logs", name+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start %s: %w", name, err)
	}
	c.logf("started %s (pid %d)", name, cmd.Process.Pid)
	if err := os.WriteFile(c.path("pids", name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	// Reap it if it dies while we are still waiting, so alive() sees the exit at once.
	done := make(chan struct{})
	if c.exited == nil {
		c.exited = map[string]chan struct{}{}
	}
	c.exited[name] = done
	go func() { _ = cmd.Wait(); close(done) }()
	return nil
}

// pid returns the recorded pid of a component if that process is still ours: alive and
// with this cluster's state directory on its command line (guards against pid reuse).
func (c *cluster) pid(name string) (int, bool) {
	raw, err := os.ReadFile(c.path("pids", name+".pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(c.dir)) {
		return 0, false
	}
	return pid, true
}

// alive reports whether a component is running. For processes this invocation started
// it asks the child itself: right after fork, /proc/<pid>/cmdline still shows our own
// arguments, so the pid check would misreport a starting process as gone.
func (c *cluster) alive(name string) func() bool {
	return func() bool {
		if done, ok := c.exited[name]; ok {
			select {
			case <-done:
				return false
			default:
				return true
			}
		}
		_, ok := c.pid(name)
		return ok
	}
}

func (c *cluster) runningComponents() []string {
	var running []string
	for _, name := range c.components() {
		if _, ok := c.pid(name); ok {
			running = append(running, name)
		}
	}
	return running
}

// down stops the cluster and removes its state.
func (c *cluster) down() error {
	if _, err := os.Stat(c.dir); errors.Is(err, os.ErrNotExist) {
		c.logf("not running (no state at %s)", c.dir)
		return nil
	}
	if err := c.stopAll(); err != nil {
		return err
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("failed to remove %s: %w", c.dir, err)
	}
	c.logf("stopped and removed %s", c.dir)
	return nil
}

// stopAll sends SIGTERM in reverse start order, then SIGKILL to anything still alive.
func (c *cluster) stopAll() error {
	var pids []int
	components := c.components()
	// Containers first, while containerd can still stop them and reap their processes.
	c.stopTasks()
	for i := len(components) - 1; i >= 0; i-- {
		if pid, ok := c.pid(components[i]); ok {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, name := range components {
		for c.alive(name)() && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if pid, ok := c.pid(name); ok {
			c.logf("%s (pid %d) still running 15s after SIGTERM; sending SIGKILL", name, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if running := c.runningComponents(); len(running) > 0 {
		return fmt.Errorf("still running after SIGKILL: %s", strings.Join(running, ", "))
	}
	if len(pids) > 0 {
		c.logf("stopped pids %v", pids)
	}
	c.stopContainers()
	return nil
}

// restart kills component `name` (SIGKILL: a crash, not a graceful shutdown), keeps it down
// for `down`, starts it again with the command line it had and waits until it answers:
// kube-apiserver's /readyz, etcd's /health.
func (c *cluster) restart(name string, down, timeout time.Duration) error {
	pid, ok := c.pid(name)
	if !ok {
		return fmt.Errorf("%s of cluster %s is not running", name, c.name)
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return err
	}
	argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("failed to kill %s (pid %d): %w", name, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, still := c.pid(name); !still {
			break
		}
	}
	c.logf("killed %s (pid %d); down for %s", name, pid, down)
	time.Sleep(down)
	c.binDir = filepath.Dir(argv[0])
	if err := c.spawn(name, argv[1:]...); err != nil {
		return err
	}
	ports, err := c.readPorts()
	if err != nil {
		return err
	}
	switch name {
	case "etcd":
		url := fmt.Sprintf("http://127.0.0.1:%d/health", ports.Etcd)
		return waitFor(name+" /health", time.Now().Add(timeout), c.alive(name), func() error {
			return httpCheck(http.DefaultClient, url, `"health":"true"`)
		})
	default:
		return c.waitAPIServer(ports, timeout)
	}
}

// hangAPIServer stops kube-apiserver (SIGSTOP) for `hang` and lets it go on (SIGCONT): it
// keeps every connection open and answers nothing, like a wedged server, unlike a crash
// whose refused connections every client notices at once.
func (c *cluster) hangAPIServer(hang, timeout time.Duration) error {
	const name = "kube-apiserver"
	pid, ok := c.pid(name)
	if !ok {
		return fmt.Errorf("%s of cluster %s is not running", name, c.name)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("failed to stop %s (pid %d): %w", name, pid, err)
	}
	c.logf("stopped %s (pid %d) for %s", name, pid, hang)
	time.Sleep(hang)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("failed to continue %s (pid %d): %w", name, pid, err)
	}
	ports, err := c.readPorts()
	if err != nil {
		return err
	}
	return c.waitAPIServer(ports, timeout)
}

func (c *cluster) readPorts() (ports, error) {
	var p ports
	raw, err := os.ReadFile(c.path("ports.json"))
	if err != nil {
		return p, err
	}
	err = json.Unmarshal(raw, &p)
	return p, err
}

// waitAPIServer waits until kube-apiserver's /readyz says ok.
func (c *cluster) waitAPIServer(p ports, timeout time.Duration) error {
	const name = "kube-apiserver"
	// /readyz is public (system:public-info-viewer); the serving certificate is our own CA's.
	api := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", p.APIServer)
	return waitFor(name+" /readyz", time.Now().Add(timeout), c.alive(name), func() error {
		return httpCheck(api, url, "ok")
	})
}

func (c *cluster) status() error {
	running := c.runningComponents()
	for _, name := range c.components() {
		pid, ok := c.pid(name)
		state := "stopped"
		if ok {
			state = fmt.Sprintf("running (pid %d)", pid)
		}
		fmt.Printf("%-24s %s\n", name, state)
	}
	if len(running) != len(c.components()) {
		return fmt.Errorf("cluster %q is not fully running", c.name)
	}
	fmt.Println(c.path("kubeconfig"))
	return nil
}

// printLogs shows the tail of every component log, so a failed start explains itself.
func (c *cluster) printLogs() {
	for _, name := range c.components() {
		raw, err := os.ReadFile(c.path("logs", name+".log"))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(os.Stderr, "----- %s (last %d lines of %s) -----\n%s\n", name, len(lines),
			c.path("logs", name+".log"), strings.Join(lines, "\n"))
	}
}

func (c *cluster) adminClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(c.pki.admin.certPEM, c.pki.admin.keyPEM)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.pki.ca.cert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: roots},
	}}, nil
}

// writeKubeconfigs writes the admin kubeconfig (the one tests use) and one per component,
// each with its credentials embedded so the files can be copied anywhere.
func (c *cluster) writeKubeconfigs() error {
	server := fmt.Sprintf("https://127.0.0.1:%d", c.ports.APIServer)
	files := map[string]*keyPair{
		c.path("kubeconfig"):                             c.pki.admin,
		c.path("kubeconfigs", "kube-controller-manager"): c.pki.controllerManager,
		c.path("kubeconfigs", "kube-scheduler"):          c.pki.scheduler,
		c.path("kubeconfigs", "kwok"):                    c.pki.kwok,
		c.path("kubeconfigs", "kubelet"):                 c.pki.kubelet,
	}
	for file, kp := range files {
		if err := os.WriteFile(file, kubeconfig("olmv1-"+c.name, server, c.pki.ca.certPEM, kp), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func kubeconfig(name, server string, caPEM []byte, kp *keyPair) []byte {
	b64 := base64.StdEncoding.EncodeToString
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster:
    server: %[2]s
    certificate-authority-data: %[3]s
users:
- name: %[1]s
  user:
    client-certificate-data: %[4]s
    client-key-data: %[5]s
contexts:
- name: %[1]s
  context:
    cluster: %[1]s
    user: %[1]s
current-context: %[1]s
`, name, server, b64(caPEM), b64(kp.certPEM), b64(kp.keyPEM)))
}

// createNode registers the simulated node; kwok (--manage-all-nodes) marks it Ready and
// keeps its lease, and runs every Pod bound to it.
func (c *cluster) createNode(api *http.Client, apiURL string) error {
	node := map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata": map[string]any{
			"name": nodeName,
			"labels": map[string]string{
				"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "type": "kwok",
			},
			"annotations": map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		"status": map[string]any{
			"capacity":    map[string]string{"cpu": "64", "memory": "256Gi", "pods": "1000"},
			"allocatable": map[string]string{"cpu": "64", "memory": "256Gi", "pods": "1000"},
		},
	}
	body, err := json.Marshal(node)
	if err != nil {
		return err
	}
	resp, err := api.Post(apiURL+"/api/v1/nodes", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("failed to create node %s: %w", nodeName, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("failed to create node %s: %s: %s", nodeName, resp.Status, msg)
	}
	return nil
}

func nodeReady(api *http.Client, apiURL, name string) error {
	resp, err := api.Get(apiURL + "/api/v1/nodes/" + name)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var node struct {
		Spec struct {
			Taints []struct{ Key string } `json:"taints"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&node); err != nil {
		return err
	}
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == "Ready" && cond.Status == "True" {
			ready = true
		}
	}
	if !ready {
		return errors.New("node not Ready yet")
	}
	// The node lifecycle controller lifts this taint once it sees Ready; until then the
	// scheduler would leave Pods Pending.
	for _, t := range node.Spec.Taints {
		if t.Key == "node.kubernetes.io/not-ready" {
			return errors.New("node still tainted not-ready")
		}
	}
	return nil
}

// waitFor polls check until it succeeds, the deadline passes, or the owning process dies
// (then there is no point waiting out the timeout).
func waitFor(what string, deadline time.Time, alive func() bool, check func() error) error {
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		if !alive() {
			return fmt.Errorf("waiting for %s: the process exited (see its log below): %v", what, last)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s: %v", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func httpCheck(client *http.Client, url, want string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return nil
}

// freePorts reserves distinct free loopback ports by holding all listeners open at once.
//
// The ports are chosen at random below the kernel's ephemeral range, not by listening on
// port 0: port 0 hands out ports from that range, where every outgoing connection also takes
// its source port, so between releasing a port here and etcd or kube-apiserver binding it, one
// of the connections a test run keeps opening could take it (testkit's free_port met exactly
// that). Below the range only another listener can take it. From 20000 up, clear of the ports
// Kubernetes components and `make run` use by default.
func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	first, end := 20000, ephemeralStart()
	next := func() (int, error) {
		if end > first {
			for attempt := 0; attempt < 64; attempt++ {
				port := first + rand.IntN(end-first)
				if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
					ls = append(ls, l)
					return port, nil
				}
			}
		}
		// A machine whose ephemeral range starts low, or a crowded one: the kernel's choice.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		ls = append(ls, l)
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	var p ports
	for _, dst := range []*int{&p.Etcd, &p.EtcdPeer, &p.APIServer, &p.ControllerManager, &p.Scheduler, &p.Kwok, &p.Kubelet, &p.KubeletHealthz} {
		port, err := next()
		if err != nil {
			return p, fmt.Errorf("failed to find a free port: %w", err)
		}
		*dst = port
	}
	return p, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read).
func ephemeralStart() int {
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if fields := strings.Fields(string(b)); len(fields) > 0 {
			if n, err := strconv.Atoi(fields[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}

// advertiseAddress picks the first non-loopback IPv4 address of an up interface.
func advertiseAddress() (net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.To4(), nil
			}
		}
	}
	return nil, errors.New("no non-loopback IPv4 address found: kube-apiserver needs one to advertise " +
		"(in a bare network namespace, add one, e.g. `ip link add dummy0 type dummy; ip addr add 10.254.0.1/32 dev dummy0; ip link set dummy0 up`)")
}

func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

// auditPolicy records every request of clients other than the control plane's own
// components at Metadata level (who, what, user agent, response code; no bodies), once per
// request. hack/process-budgets reads it to count each controller's API requests.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-controller-manager", "system:kube-scheduler", "system:apiserver", "kwok"]
- level: None
  userGroups: ["system:nodes", "system:serviceaccounts:kube-system"]
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*"]
- level: Metadata
`
