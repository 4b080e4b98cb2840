package main

import (
	"net"
	"strconv"
	"testing"
)

// The ports a cluster starts on are distinct, free, and below the ephemeral range, where no
// outgoing connection can take one between freePorts releasing it and a component binding it.
func TestFreePortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	start := ephemeralStart()
	seen := map[int]bool{}
	for round := 0; round < 10; round++ {
		p, err := freePorts()
		if err != nil {
			t.Fatal(err)
		}
		all := []int{p.Etcd, p.EtcdPeer, p.APIServer, p.ControllerManager, p.Scheduler, p.Kwok, p.Kubelet, p.KubeletHealthz}
		distinct := map[int]bool{}
		for _, port := range all {
			if distinct[port] {
				t.Fatalf("port %d handed out twice in %v", port, all)
			}
			distinct[port] = true
			seen[port] = true
			// A machine whose ephemeral range starts at or below 20000 gets the kernel's choice.
			if start > 20000 && (port < 20000 || port >= start) {
				t.Fatalf("port %d is not in [20000, %d)", port, start)
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				t.Fatalf("port %d was released but cannot be bound: %v", port, err)
			}
			l.Close()
		}
	}
	// Chosen at random, not counted up from one place: 80 draws from thousands of ports.
	if len(seen) < 40 {
		t.Fatalf("only %d distinct ports in 80 draws", len(seen))
	}
}
