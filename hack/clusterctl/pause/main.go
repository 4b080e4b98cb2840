// Command pause is the sandbox process of every Pod on the local real node: it holds the
// Pod's namespaces open and does nothing else until it is told to stop. Built by
// hack/cluster next to clusterctl; clusterctl packs it into the node's pause image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// As PID 1 of a Pod that shares its process namespace it inherits orphans; ignoring
	// SIGCHLD has the kernel reap them, so none is left a zombie.
	signal.Ignore(syscall.SIGCHLD)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
