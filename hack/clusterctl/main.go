// Command clusterctl starts and stops a local Kubernetes control plane on loopback:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (simulated
// nodes, so Pods run and Deployments become Available), and with --real-node containerd
// and a kubelet, so host-network Pods really run (node.go). Every cluster has a name;
// clusters with different names run side by side on different ports.
//
//	clusterctl up   --name NAME --bin-dir DIR [--real-node] [--state-root DIR] [--timeout 120s]
//	clusterctl down --name NAME [--state-root DIR]
//	clusterctl status --name NAME [--state-root DIR]
//	clusterctl restart-apiserver --name NAME [--down 10s] [--state-root DIR]
//	clusterctl restart-etcd --name NAME [--down 10s] [--state-root DIR]
//	clusterctl hang-apiserver --name NAME [--down 30s] [--state-root DIR]
//	clusterctl egress-proxy --name NAME --socket PATH (started by `up`; see egress.go)
//
// `up` prints the kubeconfig path as the last line of stdout. `down` stops exactly the
// processes `up` started (by pid, checked against their command line) and removes the
// state directory.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

const usage = `usage: clusterctl <up|down|status|restart-apiserver|restart-etcd|hang-apiserver> --name NAME [flags]

  up                 start a cluster and print its kubeconfig path (last line of stdout);
                     --real-node adds containerd and a kubelet (node "localhost")
  down               stop the cluster's processes and remove its state
  status             print whether the cluster's processes are running
  restart-apiserver  kill kube-apiserver, keep it down for --down, start it again with the
                     same arguments and wait for /readyz (failure and recovery tests)
  restart-etcd       the same for etcd (waits for its /health)
  hang-apiserver     stop kube-apiserver (SIGSTOP) for --down, then let it go on: a server
                     that holds every connection and answers nothing
`

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "clusterctl: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("missing command")
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	name := fs.String("name", "olmv1", "cluster name (lowercase letters, digits, '-')")
	stateRoot := fs.String("state-root", defaultStateRoot(), "directory holding one state directory per cluster")
	binDir := fs.String("bin-dir", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and kwok-stages.yaml")
	timeout := fs.Duration("timeout", 180*time.Second, "how long `up` waits for the cluster to become ready")
	realNode := fs.Bool("real-node", false, "up: also run a real node (containerd, runc, kubelet) for host-network Pods")
	socket := fs.String("socket", "", "egress-proxy: the Unix socket kube-apiserver connects to")
	down := fs.Duration("down", 10*time.Second, "how long restart-apiserver, restart-etcd and hang-apiserver keep the component down")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if !validName.MatchString(*name) {
		return fmt.Errorf("invalid cluster name %q: use 1-40 lowercase letters, digits and '-'", *name)
	}
	root, err := filepath.Abs(*stateRoot)
	if err != nil {
		return err
	}
	c := &cluster{name: *name, dir: filepath.Join(root, *name), realNode: *realNode}
	switch cmd {
	case "up":
		if *binDir == "" {
			return errors.New("up needs --bin-dir")
		}
		bin, err := filepath.Abs(*binDir)
		if err != nil {
			return err
		}
		c.binDir = bin
		kubeconfig, err := c.up(*timeout)
		if err != nil {
			return err
		}
		fmt.Println(kubeconfig)
		return nil
	case "down":
		return c.down()
	case "status":
		return c.status()
	case "restart-apiserver":
		return c.restart("kube-apiserver", *down, *timeout)
	case "restart-etcd":
		return c.restart("etcd", *down, *timeout)
	case "egress-proxy":
		if *socket == "" {
			return errors.New("egress-proxy needs --socket")
		}
		return c.runEgressProxy(*socket)
	case "hang-apiserver":
		return c.hangAPIServer(*down, *timeout)
	default:
		fmt.Fprint(os.Stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

func defaultStateRoot() string {
	if dir := os.Getenv("OLMV1_STATE_DIR"); dir != "" {
		return dir
	}
	return filepath.Join(os.TempDir(), "olmv1-rs-clusters")
}
