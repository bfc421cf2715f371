package audit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handlers are the auditor's HTTP endpoints: /metrics, and the probes /healthz (the process
// serves) and /readyz (a scan completed, so the metrics describe the cluster).
func (a *Auditor) Handlers() (metrics, probes http.Handler) {
	m := http.NewServeMux()
	m.Handle("/metrics", promhttp.HandlerFor(a.opts.Metrics.Registry, promhttp.HandlerOpts{}))
	p := http.NewServeMux()
	p.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	p.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "no scan completed yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return m, p
}

// Server is one listening HTTP server.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan error
}

// Serve listens on addr (host:port; port 0 picks one) and serves h until Shutdown.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, addr: ln.Addr(), done: make(chan error, 1)}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.addr.String() }

// Shutdown stops the server, letting requests in flight finish within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop server on %s: %w", s.addr, err)
	}
	return <-s.done
}
