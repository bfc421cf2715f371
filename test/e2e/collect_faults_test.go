package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
)

// faultRule fails the requests of Method whose path matches Path (and whose query contains
// Query), the first Times of them (0:
// every one) after the first Skip: with the apiserver's Status for Code, with Err before the request is sent (the
// connection refused or reset), or by forwarding and cutting the answer's last CutLast bytes
// (the connection broke while the body streamed).
type faultRule struct {
	Method  string
	Path    *regexp.Regexp
	Query   string
	Skip    int
	Times   int
	Code    int
	Err     error
	CutLast int

	hits int
}

// faultyNetwork is a transport in front of the real apiserver that fails the requests its rules
// match, the network between the collector and a healthy apiserver going wrong.
type faultyNetwork struct {
	next  http.RoundTripper
	mu    sync.Mutex
	rules []*faultRule
}

func (f *faultyNetwork) rule(req *http.Request) *faultRule {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.Method != req.Method || !r.Path.MatchString(req.URL.Path) || !strings.Contains(req.URL.RawQuery, r.Query) {
			continue
		}
		if r.hits++; r.hits > r.Skip && (r.Times == 0 || r.hits <= r.Skip+r.Times) {
			return r
		}
	}
	return nil
}

func (f *faultyNetwork) RoundTrip(req *http.Request) (*http.Response, error) {
	r := f.rule(req)
	switch {
	case r == nil:
		return f.next.RoundTrip(req)
	case r.Err != nil:
		return nil, r.Err
	case r.Code != 0:
		return statusAnswer(req, r.Code), nil
	}
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:max(0, len(body)-r.CutLast)]), brokenReader{}))
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

type brokenReader struct{}

func (brokenReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// statusAnswer is the apiserver's answer of code: its Status, and for 410 the one of an expired
// continue token (cacher and etcd3 store, ResourceExpired).
func statusAnswer(req *http.Request, code int) *http.Response {
	st := apierrors.NewGenericServerResponse(code, "list", schema.GroupResource{Resource: "pods"}, "", "injected", 0, true).ErrStatus
	if code == http.StatusGone {
		st = apierrors.NewResourceExpired("the provided continue parameter is too old").ErrStatus
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, _ := json.Marshal(st)
	return &http.Response{StatusCode: code, Request: req, Body: io.NopCloser(bytes.NewReader(body)),
		Header: http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))},
			"Date": {time.Now().UTC().Format(http.TimeFormat)}}}
}

// refused and reset are the errors of a connection refused (an apiserver restarting) and reset.
var (
	refused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset   = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
)

// faultyClients are the collector's clients for cfg behind a faulty network of rules, each
// request logged as it leaves the collector.
func faultyClients(t testing.TB, cfg *rest.Config, rules ...*faultRule) (*requestLog, collect.Clients) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	log := &requestLog{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &faultyNetwork{next: rt, rules: rules} })
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { log.next = rt; return log })
	clients, err := scan.Clients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return log, clients
}

// all returns every logged request.
func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}
