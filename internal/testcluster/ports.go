package testcluster

import (
	"fmt"
	"net"
)

// freePorts reserves n distinct loopback ports. They are released before use, so another process
// could grab one in between; on a test machine that is rare enough to accept.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort reserves one loopback port and releases it, for a listener the caller starts (or, for a
// kubelet that does not answer, for nothing to listen on).
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
