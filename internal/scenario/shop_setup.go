package scenario

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
)

func (b *builder) infrastructure(ctx context.Context, _ *Shop) error {
	for _, n := range []struct{ name, pool string }{{nodeMain1, "main"}, {nodeMain2, "main"}, {nodeEdge, "edge"}, {nodeSpot, "spot"}} {
		if err := b.node(ctx, n.name, n.pool); err != nil {
			return err
		}
	}
	for _, n := range []string{nodeMain1, nodeMain2, nodeEdge, nodeSpot} {
		if err := b.waitNodeReady(ctx, n, corev1.ConditionTrue, time.Minute); err != nil {
			return err
		}
	}
	for _, ns := range []string{Namespace, LegacyNamespace, kruisemanager.Namespace} {
		if err := b.namespace(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// kruiseManager installs kruise-manager as the Helm chart does and starts its stand-in.
func (b *builder) kruiseManager(ctx context.Context, shop *Shop) error {
	version := b.env.KruiseVersion
	if version == "" {
		version = kruiseVersion
	}
	v190, err := kruisemanager.ReleaseAtLeast(version, "v1.9.0")
	if err != nil {
		return err
	}
	// The shop's release runs with CloneSetEventHandlerOptimization for its event-filter bug
	// (openkruise/kruise#2057, fixed in v1.9.0); v1.9.0 keeps the chart's default, off.
	gates := b.env.KruiseFeatureGates
	if !v190 {
		gates = append([]string{"CloneSetEventHandlerOptimization"}, gates...)
	}
	args := []string{"--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000", "--logtostderr=true",
		"--leader-election-namespace=" + kruisemanager.Namespace, "--v=4"}
	if len(gates) > 0 {
		args = append(args, "--feature-gates="+strings.Join(gates, "=true,")+"=true")
	}
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{"pool": "main"},
		Containers: []corev1.Container{{
			Name: kruisemanager.Container, Image: "openkruise/kruise-manager:" + version, Command: []string{"/manager"},
			Args: append(args, "--expectation-timeout="+expectationTimeout.String()),
		}},
	}
	labels := kruisemanager.PodLabels()
	replicas := int32(2)
	if err := b.deploymentWithLabels(ctx, kruisemanager.Namespace, kruisemanager.Deployment, labels, replicas, spec); err != nil {
		return err
	}
	if err := b.waitDeploymentAvailable(ctx, kruisemanager.Namespace, kruisemanager.Deployment); err != nil {
		return err
	}
	m := kruisemanager.New(b.env.Kube, b.env.Dynamic, kruisemanager.Options{
		LogFile:            b.env.Files.ManagerLog,
		Logf:               b.env.Logf,
		EventFilter:        !v190,
		VerticalScaling:    slices.Contains(b.env.KruiseFeatureGates, "InPlaceWorkloadVerticalScaling"),
		WaitScheduled:      v190,
		ExpectationTimeout: expectationTimeout,
	})
	go m.Run(ctx)
	shop.Manager = m
	if err := m.WaitLeading(ctx, time.Minute); err != nil {
		return err
	}
	shop.Healthy = append(shop.Healthy, Object{"Deployment", kruisemanager.Namespace, kruisemanager.Deployment})
	return nil
}

// workloads creates the shop: Deployments run by kube-controller-manager, CloneSets run by
// kruise-manager, each pinned to a node pool.
func (b *builder) workloads(ctx context.Context, shop *Shop) error {
	img := func(name, tag string) string { return "registry.shop.example/" + name + ":" + tag }
	deployments := []struct {
		name     string
		replicas int32
		pool     string
	}{
		{"frontend", 2, "main"},      // healthy
		{"image-resizer", 1, "main"}, // its pod gets a finalizer from a controller later uninstalled
		{"search", 1, "edge"},        // on the node whose kubelet dies
		{"recommender", 1, "spot"},   // on the node that is reclaimed
		{"checkout-api", 2, "main"},  // rolled later to an image tag that was never pushed
	}
	for _, d := range deployments {
		if err := b.deployment(ctx, Namespace, d.name, d.replicas, podSpec(d.pool, img(d.name, "2.4.1"), nil)); err != nil {
			return err
		}
	}
	notRequired := func(r corev1.ResourceName) corev1.ContainerResizePolicy {
		return corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.NotRequired}
	}
	restart := func(r corev1.ResourceName) corev1.ContainerResizePolicy {
		return corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.RestartContainer}
	}
	cloneSets := []cloneSetSpec{
		{name: "catalog", replicas: 3, spec: podSpec("main", img("catalog", "5.2.0"), nil)}, // healthy
		{name: "orders", replicas: 2, spec: podSpec("main", img("orders", "3.8.2"), nil), // healthy, with a label hook
			lifecycle: map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{registryLabel: "true"}}}},
		{name: "cart", replicas: 2, spec: podSpec("main", img("cart", "1.14.0"), nil),
			lifecycle: map[string]any{"preNormal": map[string]any{"finalizersHandler": []any{registryFinalizer}}}},
		{name: "payments", replicas: 1, spec: podSpec("main", img("payments", "7.0.3"), nil),
			lifecycle: map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{warmupLabel: "true"}}}},
		{name: "checkout", replicas: 1, spec: podSpec("main", img("checkout", "4.1.0"), nil)},
		{name: "reviews", replicas: 2, updateType: "InPlaceIfPossible", // healthy, in place
			spec: podSpec("main", img("reviews", "2.0.7"), []corev1.ContainerResizePolicy{notRequired(corev1.ResourceCPU), restart(corev1.ResourceMemory)})},
		{name: "inventory", replicas: 2, updateType: "InPlaceIfPossible",
			spec: podSpec("main", img("inventory", "6.3.1"), []corev1.ContainerResizePolicy{notRequired(corev1.ResourceCPU), notRequired(corev1.ResourceMemory)})},
	}
	for _, c := range cloneSets {
		if err := b.cloneSet(ctx, Namespace, c); err != nil {
			return err
		}
	}
	for _, d := range deployments {
		if err := b.waitDeploymentAvailable(ctx, Namespace, d.name); err != nil {
			return err
		}
	}
	for _, c := range cloneSets {
		if err := b.waitCloneSetSteady(ctx, Namespace, c.name); err != nil {
			return err
		}
	}
	return nil
}
