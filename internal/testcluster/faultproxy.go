package testcluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// FaultProxy is a reverse proxy in front of a cluster's apiserver that injects the faults a
// loaded, restarting or load-balanced apiserver produces. It listens on loopback only, in plain
// HTTP/1.1, and adds the harness's admin credentials to what it forwards, so a kubeconfig with
// no credentials pointing at it (Kubeconfig) acts as the admin.
type FaultProxy struct {
	// URL is http://127.0.0.1:<port>.
	URL string
	// Kubeconfig points at the proxy, in the namespace given to StartFaultProxy.
	Kubeconfig string

	upstream string
	rt       http.RoundTripper
	mu       sync.Mutex
	rules    []*FaultRule
}

// Fault is what a rule does to a request it matches.
type Fault int

const (
	// Status answers Code (with Retry-After, when set) without forwarding.
	Status Fault = iota
	// CutBody forwards, then sends the first CutAfter bytes of the answer and drops the connection.
	CutBody
	// Reset drops the connection before forwarding: no answer, nothing reached the apiserver.
	Reset
	// LoseAnswer forwards the request, so it reaches the apiserver, then drops the connection
	// without answering.
	LoseAnswer
	// Before forwards after calling Hook: another writer acting between a read and a write.
	Before
)

// FaultRule matches requests by method and path (and never watches) and applies its fault.
type FaultRule struct {
	// Method is the HTTP method ("GET" for a LIST or a GET, "PATCH", "DELETE", "POST"); "" any.
	Method string
	// Path is matched against the request's URL path, e.g. ^/api/v1/namespaces/shop/pods$ for
	// the LIST of a namespace's pods.
	Path  *regexp.Regexp
	Fault Fault
	// Code and RetryAfter (seconds) are the answer of a Status fault.
	Code, RetryAfter int
	// CutAfter is how many bytes of the answer a CutBody fault sends.
	CutAfter int
	// Hook runs before a Before fault forwards.
	Hook func()
	// Times is how many matching requests the rule applies to; 0 is every one.
	Times int

	hits int
}

// StartFaultProxy starts a fault proxy in front of c's apiserver and stops it with the test. Its
// kubeconfig's context defaults to namespace.
func (c *Cluster) StartFaultProxy(t testing.TB, namespace string) *FaultProxy {
	t.Helper()
	rt, err := rest.TransportFor(c.RESTConfig())
	if err != nil {
		t.Fatalf("fault proxy transport: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy listen: %v", err)
	}
	p := &FaultProxy{URL: "http://" + ln.Addr().String(), upstream: c.APIServerURL, rt: rt}
	srv := &http.Server{Handler: p}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["faults"] = &clientcmdapi.Cluster{Server: p.URL}
	cfg.AuthInfos["faults"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["faults"] = &clientcmdapi.Context{Cluster: "faults", AuthInfo: "faults", Namespace: namespace}
	cfg.CurrentContext = "faults"
	p.Kubeconfig = filepath.Join(t.TempDir(), "faultproxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, p.Kubeconfig); err != nil {
		t.Fatalf("write fault proxy kubeconfig: %v", err)
	}
	return p
}

// Set replaces the rules; Set() forwards everything untouched.
func (p *FaultProxy) Set(rules ...*FaultRule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = rules
}

// Hits is how many requests the rule applied to.
func (p *FaultProxy) Hits(r *FaultRule) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return r.hits
}

// match returns the rule that applies to req, counting the hit, or nil.
func (p *FaultProxy) match(req *http.Request) *FaultRule {
	if req.URL.Query().Get("watch") == "true" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if (r.Method == "" || r.Method == req.Method) && r.Path.MatchString(req.URL.Path) && (r.Times == 0 || r.hits < r.Times) {
			r.hits++
			return r
		}
	}
	return nil
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := p.match(req)
	switch {
	case r == nil:
	case r.Fault == Status:
		p.status(w, r)
		return
	case r.Fault == Reset:
		panic(http.ErrAbortHandler) // the server closes the connection unanswered
	case r.Fault == Before && r.Hook != nil:
		r.Hook()
	}
	resp, err := p.forward(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if r != nil && r.Fault == LoseAnswer {
		_, _ = io.Copy(io.Discard, resp.Body) // the apiserver has done the write
		panic(http.ErrAbortHandler)
	}
	for k, vs := range resp.Header {
		if k != "Content-Length" || r == nil {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	if r != nil && r.Fault == CutBody {
		_, _ = io.CopyN(w, resp.Body, int64(r.CutAfter))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // chunked: the client sees the body end early
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		if err != nil {
			return
		}
	}
}

// forward sends req to the apiserver with the harness's credentials.
func (p *FaultProxy) forward(req *http.Request) (*http.Response, error) {
	out, err := http.NewRequestWithContext(req.Context(), req.Method, p.upstream+req.URL.RequestURI(), req.Body)
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		if k != "Authorization" {
			out.Header[k] = vs
		}
	}
	out.ContentLength = req.ContentLength
	return p.rt.RoundTrip(out)
}

// status answers with the apiserver's Status for r.Code.
func (p *FaultProxy) status(w http.ResponseWriter, r *FaultRule) {
	st := apierrors.NewGenericServerResponse(r.Code, "", schema.GroupResource{}, "", "injected by the fault proxy", r.RetryAfter, true).ErrStatus
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, err := json.Marshal(st)
	if err != nil {
		body = []byte(fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":%d}`, r.Code))
	}
	w.Header().Set("Content-Type", "application/json")
	if r.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(r.RetryAfter))
	}
	w.WriteHeader(r.Code)
	_, _ = w.Write(body)
}
