// Package scenario builds "shop", an application whose cluster has every failure the plugin
// diagnoses, each produced the way it arises in a real cluster: through the API, by the
// controllers that own the objects (kube-controller-manager, kube-scheduler, kwok playing the
// kubelets, and a stand-in for kruise-manager, package kruisemanager), with the people and
// third-party controllers of the story doing what they would. The demo (hack/demo) and the demo e2e test
// (test/e2e/demo_test.go) run it on a cluster from ClusterOptions.
package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
)

// Namespaces of the scenario.
const (
	Namespace       = "shop"
	LegacyNamespace = "shop-legacy"
)

// The kruise-manager the cluster runs: v1.7.0 with CloneSetEventHandlerOptimization on, which has
// the event-filter bug openkruise/kruise#2057 and predates the expectation timeout handling of
// openkruise/kruise#1829. --expectation-timeout is short so its overtime log line shows up while
// the demo starts (the default is 5m).
const (
	kruiseVersion      = "v1.7.0"
	expectationTimeout = 30 * time.Second
)

// Nodes: two healthy ones, one whose kubelet dies, one that is removed.
const (
	nodeMain1 = "shop-main-1"
	nodeMain2 = "shop-main-2"
	nodeEdge  = "shop-edge-1"
	nodeSpot  = "shop-spot-1"
)

// Hooks and finalizers of the third-party controllers in the story.
const (
	registryController = "registry-controller"
	registryFinalizer  = "registry.shop.example/registered"
	registryLabel      = "registry.shop.example/registered"
	warmupController   = "warmup-controller"
	warmupLabel        = "warmup.shop.example/ready"
	cacheWarmer        = "cache-warmer"
	cacheFinalizer     = "cache.shop.example/flush"
	volumeJanitor      = "volume-janitor"
	volumeFinalizer    = "storage.shop.example/release-volume"
)

// The broken aggregated API left behind when the legacy app was uninstalled.
const (
	legacyAPIService = "v1beta1.metrics.shop.example"
	legacyService    = "legacy-metrics"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Env is what Build needs: admin clients of a cluster started with ClusterOptions (the project's
// OpenKruise CRDs installed), the files ClusterOptions wrote, and where progress goes.
type Env struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Files   Files
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
	// KruiseFeatureGates are the kruise-manager feature gates enabled besides the chart's
	// (StartKruiseManager); the stand-in models InPlaceWorkloadVerticalScaling.
	KruiseFeatureGates []string
	// KruiseVersion is the kruise-manager release the Deployment runs and the stand-in plays where
	// releases differ (StartKruiseManager); "" is the shop's v1.7.0.
	KruiseVersion string
}

// Object names a Kubernetes object.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return strings.ToLower(o.Kind) + "/" + o.Name
	}
	return o.Namespace + "/" + strings.ToLower(o.Kind) + "/" + o.Name
}

// Expectation is a finding the scan must report: one check and root cause on one object.
type Expectation struct {
	Check     string `json:"check"`
	RootCause string `json:"rootCause"`
	Object    Object `json:"object"`
	// Fixable is true when `fix --yes` resolves it; otherwise it needs a person and stays.
	Fixable bool `json:"fixable"`
	// Story says in one line what happened, for the demo's legend.
	Story string `json:"story"`
}

// Shop is the built scenario.
type Shop struct {
	// Expected are the findings a scan with --min-age 0s reports, and nothing else.
	Expected []Expectation `json:"expected"`
	// Healthy are workloads and pods that no finding may name, as its object or its owner.
	Healthy []Object `json:"healthy"`
	// Manager is the kruise-manager stand-in; it runs until Build's ctx ends.
	Manager *kruisemanager.Manager `json:"-"`
}

// Build creates the shop and breaks it, then returns once every broken state is in place (a few
// minutes at most; the slowest part is PodGC, which waits 40s before it acts on a missing node).
// The kruise-manager stand-in keeps running until ctx ends, so the caller keeps ctx alive for as
// long as the scenario should live.
func Build(ctx context.Context, env Env) (*Shop, error) {
	b := newBuilder(env)
	shop := &Shop{}
	steps := []struct {
		what string
		do   func(context.Context, *Shop) error
	}{
		{"nodes and namespaces", b.infrastructure},
		{"kruise-manager " + kruiseVersion, b.kruiseManager},
		{"the shop's workloads", b.workloads},
		{"hook controllers act on new pods", b.hooks},
		{"the search indexer starts on the edge node", b.indexer},
		{"the spot node is reclaimed and the edge node's kubelet dies", b.nodes},
		{"kruise-manager loses a pod event of CloneSet checkout", b.lostEvent},
		{"someone deletes pods and edits a template", b.operations},
		{"checkout-api is rolled to an image tag that was never pushed", b.badImage},
		{"the on-call retires a wishlist pod by name", b.retire},
		{"the policy engine is uninstalled, leaving its webhook; the ledger StatefulSet is retired in the foreground", b.policyEngine},
		{"the legacy app is uninstalled, leaving its APIService", b.legacy},
		{"four CloneSets get a new template; one asks for a node pool nobody has, two are held back", b.rollouts},
		{"the order archive's claim is deleted while the archiver still runs", b.storage},
		{"the indexer is deleted with --cascade=foreground after its node died", b.retireIndexer},
		{"waiting for the cluster to settle into the broken states", b.settle},
	}
	for i, s := range steps {
		env.Logf("[%d/%d] %s", i+1, len(steps), s.what)
		if err := s.do(ctx, shop); err != nil {
			return shop, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return shop, nil
}

func newBuilder(env Env) *builder {
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	return &builder{env: env, deleted: map[string][]string{}}
}

func (s *Shop) expect(check, rootCause string, obj Object, fixable bool, story string) {
	s.Expected = append(s.Expected, Expectation{Check: check, RootCause: rootCause, Object: obj, Fixable: fixable, Story: story})
}

func pod(name string) Object { return Object{"Pod", Namespace, name} }
