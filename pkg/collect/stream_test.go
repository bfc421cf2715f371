package collect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect/internal/protolist"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// encodedList is a PartialObjectMetadataList as the apiserver sends it in protobuf.
func encodedList(t *testing.T, l *metav1.PartialObjectMetadataList) []byte {
	t.Helper()
	raw, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return protoEnvelope(raw)
}

// protoEnvelope wraps an encoded object as the apiserver sends it: the magic, then a
// runtime.Unknown whose raw field holds it.
func protoEnvelope(raw []byte) []byte {
	env, err := (&runtime.Unknown{Raw: raw, ContentType: "application/vnd.kubernetes.protobuf"}).Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte(protolist.Magic), env...)
}

func testList(n int, cont string) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: cont}}
	for i := range n {
		ctrl := true
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-%d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "7",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x", kruise.AnnotationLifecycleTime: "2026-11-01T10:00:00Z"}, Finalizers: []string{"example.com/f"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8", UID: "rs", Controller: &ctrl}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}},
		}})
	}
	return l
}

func TestDecodeMetaPage(t *testing.T) {
	want := testList(3, "next-page")
	pb := encodedList(t, want)
	js, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"protobuf": pb, "json": js} {
		t.Run(name, func(t *testing.T) {
			var (
				lists []metav1.ListMeta
				items []metav1.ObjectMeta
				item  metav1.ObjectMeta
			)
			err := decodeMetaPage(bytes.NewReader(body), &item, map[string]bool{kruise.AnnotationLifecycleTime: true}, func(l *metav1.ListMeta) { lists = append(lists, *l) },
				func(m *metav1.ObjectMeta) { items = append(items, *m) })
			if err != nil {
				t.Fatal(err)
			}
			if len(lists) != 1 || lists[0].Continue != "next-page" || lists[0].ResourceVersion != "42" {
				t.Errorf("list metadata = %+v", lists)
			}
			if len(items) != len(want.Items) {
				t.Fatalf("%d items, want %d", len(items), len(want.Items))
			}
			for i, got := range items {
				// Bulk pods keep neither managedFields nor annotations no check reads.
				w := want.Items[i].ObjectMeta.DeepCopy()
				w.ManagedFields = nil
				delete(w.Annotations, "note")
				if !reflect.DeepEqual(&got, w) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, got, *w)
				}
			}
		})
	}
}

func TestDecodeMetaPageRejectsTruncatedStreams(t *testing.T) {
	pb := encodedList(t, testList(3, ""))
	js, err := json.Marshal(testList(3, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range [][]byte{pb, js} {
		for _, cut := range []int{len(body) - 1, len(body) / 2, len(protolist.Magic) + 3} {
			var item metav1.ObjectMeta
			n := 0
			err := decodeMetaPage(bytes.NewReader(body[:cut]), &item, nil, func(*metav1.ListMeta) {}, func(*metav1.ObjectMeta) { n++ })
			if err == nil {
				t.Errorf("cut at %d of %d: no error (%d items)", cut, len(body), n)
			}
		}
	}
}

func TestStreamsLists(t *testing.T) {
	for _, tc := range []struct {
		major, minor string
		want         bool
	}{{"1", "37", true}, {"1", "33", true}, {"1", "33+", true}, {"1", "32", false}, {"1", "28+", false}, {"2", "0", true}, {"", "", false}} {
		if got := streamsLists(tc.major, tc.minor); got != tc.want {
			t.Errorf("streamsLists(%q, %q) = %v, want %v", tc.major, tc.minor, got, tc.want)
		}
	}
}

func TestDecodePodPageKeepsOnlyWantedPods(t *testing.T) {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "more"}}
	for i := range 4 {
		l.Items = append(l.Items, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	raw, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]bool{"uid-1": true, "uid-3": true}
	for name, body := range map[string][]byte{"protobuf": protoEnvelope(raw), "json": js} {
		t.Run(name, func(t *testing.T) {
			var cont string
			var got []*corev1.Pod
			if err := decodePodPage(bytes.NewReader(body), func(lm *metav1.ListMeta) { cont = lm.Continue }, want,
				func(p *corev1.Pod) { got = append(got, p) }); err != nil {
				t.Fatal(err)
			}
			if cont != "more" {
				t.Errorf("continue = %q", cont)
			}
			if len(got) != 2 || !reflect.DeepEqual(*got[0], l.Items[1]) || !reflect.DeepEqual(*got[1], l.Items[3]) {
				t.Errorf("kept %+v, want pods p1 and p3 whole", got)
			}
		})
	}
}

// splitReader serves a body in two reads, calling at just before it serves the second.
type splitReader struct {
	first, rest []byte
	at          func()
	served      int
}

func (r *splitReader) Read(p []byte) (int, error) {
	switch r.served {
	case 0:
		r.served++
		return copy(p, r.first), nil // the whole first part fits the decoder's buffer
	case 1:
		r.served++
		r.at()
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// TestDecodeJSONPageItemByItem: a JSON page is handed on as it arrives, as a protobuf one is:
// the list metadata (whose continue token opens the next page) and the first item are handed on
// before the rest of the body is read. A capture's clients read JSON, and an unpaged list of 100k
// pods is hundreds of MB of it.
func TestDecodeJSONPageItemByItem(t *testing.T) {
	js, err := json.Marshal(testList(3, "next-page"))
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(js, []byte(`{"metadata":{"name":"web-1"`))
	if cut < 0 {
		t.Fatalf("no second item in %s", js)
	}
	var seen []string
	var atCut []string
	body := &splitReader{first: js[:cut], rest: js[cut:], at: func() { atCut = slices.Clone(seen) }}
	var item metav1.ObjectMeta
	if err := decodeMetaPage(body, &item, nil, func(l *metav1.ListMeta) { seen = append(seen, "continue "+l.Continue) },
		func(m *metav1.ObjectMeta) { seen = append(seen, m.Name) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"continue next-page", "web-0"}; !slices.Equal(atCut, want) {
		t.Errorf("before the rest of the body was read, %v was handed on, want %v", atCut, want)
	}
	if want := []string{"continue next-page", "web-0", "web-1", "web-2"}; !slices.Equal(seen, want) {
		t.Errorf("handed on %v, want %v", seen, want)
	}
}
