package main

// The API server's way out. kube-apiserver sends every connection it opens to the cluster
// (admission and conversion webhooks, aggregated APIs, kubelets for logs and exec) through
// an HTTP CONNECT proxy on a Unix socket (--egress-selector-config-file). This proxy is that
// egress: it keeps every such packet on 127.0.0.1, as the local cluster's network rule
// requires.
//
//   - A Service address (the ClusterIP the API server resolved a webhook's Service to) is
//     mapped to 127.0.0.1 and the Service's target port: every Pod that can serve here runs
//     with host networking on the one real node, whose address is 127.0.0.1. EndpointSlices
//     cannot carry a loopback address (API validation refuses it), so Service addresses are
//     the only name the API server can be given for a host-network Pod.
//   - A loopback address (the kubelet on localhost) is dialled as asked.
//   - Anything else is refused: with no kube-proxy and no pod network, such an address
//     could only be reached through the host's default route, off this machine.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// egressConfig is kube-apiserver's EgressSelectorConfiguration: "cluster" traffic goes
// through the proxy on `socket`; control-plane traffic (etcd, its own loopback) is direct.
func egressConfig(socket string) string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socket)
}

// serviceTarget is where one Service port is served on this machine.
type serviceTarget struct {
	namespace, name string
	port            int
}

// serviceTable answers "which Service owns ClusterIP:port" from a short-lived copy of the
// Service list, so a burst of webhook calls costs one list, and a new Service is seen
// within `ttl`.
type serviceTable struct {
	api    *http.Client
	apiURL string
	ttl    time.Duration

	mu      sync.Mutex
	fetched time.Time
	targets map[string]serviceTarget // "clusterIP:port" → target
}

func (t *serviceTable) lookup(hostPort string) (serviceTarget, bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if target, ok := t.targets[hostPort]; ok && time.Since(t.fetched) < t.ttl {
		return target, true, nil
	}
	// A miss refreshes at once: the Service may be seconds old.
	if err := t.refresh(); err != nil {
		return serviceTarget{}, false, err
	}
	target, ok := t.targets[hostPort]
	return target, ok, nil
}

func (t *serviceTable) refresh() error {
	resp, err := t.api.Get(t.apiURL + "/api/v1/services")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("listing Services: %s: %s", resp.Status, body)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Namespace, Name string } `json:"metadata"`
			Spec     struct {
				ClusterIPs []string `json:"clusterIPs"`
				Ports      []struct {
					Port       int             `json:"port"`
					TargetPort json.RawMessage `json:"targetPort"`
				} `json:"ports"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return err
	}
	targets := map[string]serviceTarget{}
	for _, svc := range list.Items {
		for _, p := range svc.Spec.Ports {
			// A numeric targetPort, or none (then it is the Service port). A named port
			// would need the Pod's container ports; nothing this project renders uses one.
			target := p.Port
			if len(p.TargetPort) > 0 {
				if n, err := strconv.Atoi(string(p.TargetPort)); err == nil {
					target = n
				} else {
					continue
				}
			}
			for _, ip := range svc.Spec.ClusterIPs {
				targets[net.JoinHostPort(ip, strconv.Itoa(p.Port))] = serviceTarget{svc.Metadata.Namespace, svc.Metadata.Name, target}
			}
		}
	}
	t.targets, t.fetched = targets, time.Now()
	return nil
}

// resolve decides where a CONNECT to hostPort goes, or why it may not.
func (t *serviceTable) resolve(hostPort string) (string, string, error) {
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", "", fmt.Errorf("bad CONNECT target %q: %w", hostPort, err)
	}
	if host == "localhost" {
		return net.JoinHostPort("127.0.0.1", port), "loopback", nil
	}
	ip := net.ParseIP(host)
	if ip != nil && ip.IsLoopback() {
		return hostPort, "loopback", nil
	}
	target, ok, err := t.lookup(hostPort)
	if err != nil {
		return "", "", err
	}
	if !ok {
		return "", "", fmt.Errorf("%s is neither a Service port nor loopback; refusing to route it off this machine", hostPort)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(target.port)), "service " + target.namespace + "/" + target.name, nil
}

// runEgressProxy serves HTTP CONNECT on a Unix socket until SIGTERM.
func (c *cluster) runEgressProxy(socket string) error {
	p, err := c.readPorts()
	if err != nil {
		return err
	}
	c.pki, err = loadPKI(c.path("pki"))
	if err != nil {
		return err
	}
	api, err := c.adminClient()
	if err != nil {
		return err
	}
	table := &serviceTable{api: api, apiURL: fmt.Sprintf("https://127.0.0.1:%d", p.APIServer), ttl: 2 * time.Second}
	_ = os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	if err := os.Chmod(socket, 0o600); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() { <-ctx.Done(); ln.Close() }()
	c.logf("egress proxy listening on %s", socket)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go table.serve(conn, c.logf)
	}
}

func (t *serviceTable) serve(conn net.Conn, logf func(string, ...any)) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reader := bufio.NewReader(conn)
	req, err := http.ReadRequest(reader)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(conn, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		return
	}
	dst, why, err := t.resolve(req.Host)
	if err != nil {
		logf("egress: refused %s: %v", req.Host, err)
		fmt.Fprintf(conn, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\n%v\n", err)
		return
	}
	upstream, err := net.DialTimeout("tcp", dst, 5*time.Second)
	if err != nil {
		logf("egress: %s (%s) → %s: %v", req.Host, why, dst, err)
		fmt.Fprintf(conn, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n\r\n%s (%s) → %s: %v\n", req.Host, why, dst, err)
		return
	}
	defer upstream.Close()
	_ = conn.SetReadDeadline(time.Time{})
	if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// The tunnel ends when either side ends, closing both (the deferred Closes). Waiting for
	// both would keep the API server's end open after a webhook's server has gone (its pod
	// replaced): the API server would keep the connection in its pool, write its next call
	// into it and wait for an answer until its timeout, instead of dialling the new server.
	done := make(chan struct{}, 2)
	go func() {
		// Bytes the API server sent after its CONNECT line are already buffered.
		_, _ = io.Copy(upstream, reader)
		done <- struct{}{}
	}()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}
