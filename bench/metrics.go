package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// sample is one measured run.
type sample struct {
	wall time.Duration
	// cpu is user plus system time of the process (0 for in-process runs).
	cpu time.Duration
	// maxRSS is the peak resident set size in bytes, from the OS (0 for in-process runs).
	maxRSS int64
	// reads is what the apiserver served during the run.
	reads apiReads
	exit  int
	// failed is a baseline run that did not complete (out of memory under the cap).
	failed bool
}

// apiReads counts the requests and response bytes the apiserver served, from its metrics.
type apiReads struct {
	requests int64
	bytes    int64
	// podRequests and podBytes are the part for the pods resource (not its subresources).
	podRequests int64
	podBytes    int64
	// podLists and podGets split podRequests by verb.
	podLists, podGets int64
	// writes are the requests of any verb but GET, LIST and WATCH: none of a scan's, so, while
	// one runs, the control plane's own (the apiserver renews its identity Lease every 10 s).
	writes int64
	// byKey and bytesByKey are the requests and bytes by "verb resource subresource".
	byKey, bytesByKey map[string]int64
}

// metrics is a scrape of the counters apiReads is computed from.
type metrics struct {
	// requests and bytes are keyed by "verb resource subresource".
	requests map[string]float64
	bytes    map[string]float64
}

// scrape reads the apiserver's request counters and response-size sums.
func scrape(ctx context.Context, kube kubernetes.Interface) (metrics, error) {
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return metrics{}, fmt.Errorf("scrape apiserver metrics: %w", err)
	}
	m := metrics{requests: map[string]float64{}, bytes: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var into map[string]float64
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			into = m.requests
		case strings.HasPrefix(line, "apiserver_response_sizes_sum{"):
			into = m.bytes
		default:
			continue
		}
		open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
		if open < 0 || end < open {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			continue
		}
		labels := parseLabels(line[open+1 : end])
		into[labels["verb"]+" "+labels["resource"]+" "+labels["subresource"]] += v
	}
	return m, sc.Err()
}

// parseLabels parses `a="x",b="y"` (label values here never contain quotes or commas).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// since returns what was served between an earlier scrape and this one. Requests for no resource
// (discovery, /version) count too, less the earlier scrape itself, which is recorded after it
// answered.
func (m metrics) since(before metrics) apiReads {
	r := apiReads{byKey: map[string]int64{}, bytesByKey: map[string]int64{}}
	for k, v := range m.requests {
		n := int64(v - before.requests[k] + 0.5)
		parts := strings.SplitN(k, " ", 3)
		if parts[1] == "" && parts[2] == "" && parts[0] == "GET" {
			n-- // the scrape before the run
		}
		if n <= 0 {
			continue
		}
		r.requests += n
		r.byKey[k] += n
		switch parts[0] {
		case "GET", "LIST", "WATCH":
		default:
			r.writes += n
		}
		if parts[1] == "pods" && parts[2] == "" {
			r.podRequests += n
			switch parts[0] {
			case "LIST":
				r.podLists += n
			case "GET":
				r.podGets += n
			}
		}
	}
	for k, v := range m.bytes {
		n := int64(v - before.bytes[k] + 0.5)
		if n <= 0 {
			continue
		}
		r.bytes += n
		r.bytesByKey[k] += n
		if parts := strings.SplitN(k, " ", 3); parts[1] == "pods" && parts[2] == "" {
			r.podBytes += n
		}
	}
	return r
}
