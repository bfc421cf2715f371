package foreign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/version"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle/source"
)

// transport answers a scan's reads from a store, as an apiserver would have at capture time.
// What the capture did not read fails with *source.NotCapturedError, never an empty list.
type transport struct {
	s      *store
	format source.Format
	date   string
	// rv is the newest resourceVersion captured, the lists' own.
	rv string
	// served are the resources discovery shows: the built-ins and what the capture holds.
	served []*resource
}

func newTransport(s *store, format source.Format, capturedAt time.Time) *transport {
	t := &transport{s: s, format: format, date: capturedAt.UTC().Format(http.TimeFormat)}
	var newest uint64
	for _, r := range s.resources {
		for _, objs := range r.objects {
			for _, u := range objs {
				if n, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64); err == nil && n > newest {
					newest = n
				}
			}
		}
	}
	t.rv = strconv.FormatUint(newest, 10)
	for _, b := range builtins {
		s.resource(schema.GroupResource{Group: b.group, Resource: b.resource}, b.kind, b.namespaced)
	}
	for _, r := range s.sortedResources() {
		if r.kind != "" && len(r.versions) > 0 {
			t.served = append(t.served, r)
		}
	}
	return t
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if req.Method != http.MethodGet {
		return t.status(req, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("%s is not allowed: a %s is read-only", req.Method, t.format)), nil
	}
	p := strings.Trim(req.URL.Path, "/")
	switch {
	case p == "version":
		v := version.Info{}
		if t.s.version != nil {
			v = *t.s.version
		}
		return t.json(req, v, "application/json"), nil
	case p == "api":
		return t.json(req, metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}, "application/json"), nil
	case p == "apis":
		return t.json(req, t.groups(), "application/json"), nil
	}
	segs := strings.Split(p, "/")
	var gv schema.GroupVersion
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		gv, segs = schema.GroupVersion{Version: segs[1]}, segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		gv, segs = schema.GroupVersion{Group: segs[1], Version: segs[2]}, segs[3:]
	default:
		return t.status(req, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"), nil
	}
	if len(segs) == 0 {
		if l, ok := t.resourceList(gv); ok {
			return t.json(req, l, "application/json"), nil
		}
		return t.status(req, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"), nil
	}
	var ns, res, name, sub string
	if segs[0] == "namespaces" && len(segs) >= 3 {
		ns, segs = segs[1], segs[2:]
	}
	res = segs[0]
	if len(segs) > 1 {
		name = segs[1]
	}
	if len(segs) > 2 {
		sub = strings.Join(segs[2:], "/")
	}
	r := t.lookup(gv, res)
	if r == nil || (ns != "" && !r.namespaced) {
		return t.status(req, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource"), nil
	}
	switch {
	case sub == "log" && r.group == "" && r.name == "pods":
		return t.log(req, ns, name)
	case sub != "":
		return nil, t.notCaptured(req)
	case name != "":
		return t.get(req, r, ns, name)
	}
	return t.list(req, r, ns)
}

// lookup finds the resource served at gv, or nil.
func (t *transport) lookup(gv schema.GroupVersion, res string) *resource {
	for _, r := range t.served {
		if r.group == gv.Group && r.name == res && slices.Contains(r.versions, gv.Version) {
			return r
		}
	}
	return nil
}

func (t *transport) notCaptured(req *http.Request) error {
	return &source.NotCapturedError{Method: req.Method, Path: req.URL.Path, Format: t.format}
}

// groups is the legacy discovery document of /apis. The aggregated form, which client-go asks
// for first, is not offered: an answer in plain JSON makes it read this one, as from a server
// older than v1.26.
func (t *transport) groups() metav1.APIGroupList {
	l := metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	index := map[string]int{}
	for _, r := range t.served {
		if r.group == "" {
			continue
		}
		i, ok := index[r.group]
		if !ok {
			i = len(l.Groups)
			index[r.group] = i
			l.Groups = append(l.Groups, metav1.APIGroup{Name: r.group})
		}
		g := &l.Groups[i]
		for _, v := range r.versions {
			gv := metav1.GroupVersionForDiscovery{GroupVersion: r.group + "/" + v, Version: v}
			if !containsGV(g.Versions, gv) {
				g.Versions = append(g.Versions, gv)
			}
		}
		g.PreferredVersion = g.Versions[0]
	}
	return l
}

func containsGV(list []metav1.GroupVersionForDiscovery, gv metav1.GroupVersionForDiscovery) bool {
	for _, x := range list {
		if x == gv {
			return true
		}
	}
	return false
}

// resourceList is the discovery document of one group version.
func (t *transport) resourceList(gv schema.GroupVersion) (metav1.APIResourceList, bool) {
	l := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, r := range t.served {
		if r.group == gv.Group && slices.Contains(r.versions, gv.Version) {
			l.APIResources = append(l.APIResources, metav1.APIResource{
				Name: r.name, Namespaced: r.namespaced, Kind: r.kind, Verbs: metav1.Verbs{"get", "list"},
			})
		}
	}
	return l, len(l.APIResources) > 0
}

// list answers a LIST in one page, filtered by the label and field selectors.
func (t *transport) list(req *http.Request, r *resource, ns string) (*http.Response, error) {
	q := req.URL.Query()
	lsel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return t.status(req, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("unable to parse requirement: %v", err)), nil
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return t.status(req, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("invalid field selector: %v", err)), nil
	}
	// A field selector on the namespace narrows which namespaces must have been listed.
	exclude := map[string]bool{}
	for _, rq := range fsel.Requirements() {
		if rq.Field != "metadata.namespace" {
			continue
		}
		switch rq.Operator {
		case selection.Equals, selection.DoubleEquals:
			if ns == "" && r.namespaced {
				ns = rq.Value
			}
		case selection.NotEquals:
			exclude[rq.Value] = true
		}
	}
	if !t.s.covers(r, ns, exclude) {
		return nil, t.notCaptured(req)
	}
	var items []*unstructured.Unstructured
	for _, key := range slices.Sorted(maps.Keys(r.objects)) {
		if ns != "" && key != ns {
			continue
		}
		for _, u := range r.objects[key] {
			if lsel.Matches(labels.Set(u.GetLabels())) && matchFields(u, fsel) {
				items = append(items, u)
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].GetNamespace() != items[j].GetNamespace() {
			return items[i].GetNamespace() < items[j].GetNamespace()
		}
		return items[i].GetName() < items[j].GetName()
	})
	if wantsMeta(req) {
		l := metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
			ListMeta: metav1.ListMeta{ResourceVersion: t.rv},
		}
		for _, u := range items {
			l.Items = append(l.Items, partial(u))
		}
		return t.json(req, l, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), nil
	}
	objs := make([]map[string]any, 0, len(items))
	for _, u := range items {
		objs = append(objs, u.Object)
	}
	body := map[string]any{
		"apiVersion": schema.GroupVersion{Group: r.group, Version: r.versions[0]}.String(),
		"kind":       r.kind + "List",
		"metadata":   map[string]any{"resourceVersion": t.rv},
		"items":      objs,
	}
	return t.json(req, body, "application/json"), nil
}

// get answers a GET by name: the object when captured; NotFound when the capture listed that
// namespace (or the cluster-scoped objects) whole and it was not there.
func (t *transport) get(req *http.Request, r *resource, ns, name string) (*http.Response, error) {
	for _, u := range r.objects[ns] {
		if u.GetName() == name {
			if wantsMeta(req) {
				return t.json(req, partial(u), "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"), nil
			}
			return t.json(req, u.Object, "application/json"), nil
		}
	}
	if (ns != "" || !r.namespaced) && t.s.covers(r, ns, nil) {
		st := &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("%s %q not found", schema.GroupResource{Group: r.group, Resource: r.name}, name),
			Details: &metav1.StatusDetails{Name: name, Group: r.group, Kind: r.name},
		}
		return t.respond(req, http.StatusNotFound, st, "application/json"), nil
	}
	return nil, t.notCaptured(req)
}

// log answers pods/log from a captured log. The capture's log is the whole answer: sinceSeconds
// cannot be applied to lines without timestamps, and the capture bounded them already.
func (t *transport) log(req *http.Request, ns, pod string) (*http.Response, error) {
	q := req.URL.Query()
	container := q.Get("container")
	if container == "" {
		if r, ok := t.s.resources[schema.GroupResource{Resource: "pods"}]; ok {
			for _, u := range r.objects[ns] {
				if u.GetName() == pod {
					cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
					if len(cs) > 0 {
						container, _ = cs[0].(map[string]any)["name"].(string)
					}
				}
			}
		}
	}
	text, ok := t.s.logs[logKey(ns, pod, container, q.Get("previous") == "true")]
	if !ok {
		return nil, t.notCaptured(req)
	}
	// A logs collector writes the lines with or without the kubelet's timestamps (its
	// timestamps field): lines without cannot answer a read that wants them; lines with them
	// answer one that does not once the timestamps are cut.
	if stamped := timestamped(text); q.Get("timestamps") == "true" && !stamped {
		return nil, t.notCaptured(req)
	} else if q.Get("timestamps") != "true" && stamped {
		text = cutTimestamps(text)
	}
	if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 {
		lines := strings.SplitAfter(text, "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		text = strings.Join(lines[max(0, len(lines)-n):], "")
	}
	if n, err := strconv.Atoi(q.Get("limitBytes")); err == nil && n >= 0 && n < len(text) {
		text = text[:n]
	}
	return t.raw(req, http.StatusOK, []byte(text), "text/plain"), nil
}

// timestamped reports whether every line of a log starts with an RFC 3339 time and a space, as
// the kubelet writes them when asked for timestamps.
func timestamped(text string) bool {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for _, l := range lines {
		stamp, _, ok := strings.Cut(l, " ")
		if _, err := time.Parse(time.RFC3339Nano, stamp); !ok || err != nil {
			return false
		}
	}
	return text != ""
}

// cutTimestamps removes the time from the start of each line.
func cutTimestamps(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		if _, rest, ok := strings.Cut(l, " "); ok {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "")
}

// wantsMeta reports whether the request asks for metadata-only answers, as the metadata client does.
func wantsMeta(req *http.Request) bool {
	return strings.Contains(req.Header.Get("Accept"), "as=PartialObjectMetadata")
}

func partial(u *unstructured.Unstructured) metav1.PartialObjectMetadata {
	m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	if raw, ok := u.Object["metadata"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &m.ObjectMeta)
	}
	return m
}

// matchFields evaluates a field selector on the object's fields, as the apiserver does for the
// fields it indexes (metadata.name, metadata.namespace, type, involvedObject.*, spec.nodeName).
func matchFields(u *unstructured.Unstructured, sel fields.Selector) bool {
	for _, rq := range sel.Requirements() {
		v := fieldValue(u.Object, rq.Field)
		switch rq.Operator {
		case selection.Equals, selection.DoubleEquals:
			if v != rq.Value {
				return false
			}
		case selection.NotEquals:
			if v == rq.Value {
				return false
			}
		}
	}
	return true
}

func fieldValue(obj map[string]any, field string) string {
	v, found, err := unstructured.NestedFieldNoCopy(obj, strings.Split(field, ".")...)
	if !found || err != nil || v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func (t *transport) json(req *http.Request, v any, contentType string) *http.Response {
	return t.respond(req, http.StatusOK, v, contentType)
}

func (t *transport) respond(req *http.Request, code int, v any, contentType string) *http.Response {
	b, err := json.Marshal(v)
	if err != nil {
		st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("encode: %v", err)}
		b, _ = json.Marshal(st)
		code, contentType = http.StatusInternalServerError, "application/json"
	}
	return t.raw(req, code, b, contentType)
}

func (t *transport) status(req *http.Request, code int, reason metav1.StatusReason, msg string) *http.Response {
	return t.respond(req, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: reason, Message: msg,
	}, "application/json")
}

// raw is an answer dated at capture time: the collector measures ages on the server's Date.
func (t *transport) raw(req *http.Request, code int, body []byte, contentType string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Date", t.date)
	return &http.Response{
		Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}
