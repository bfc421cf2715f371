package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// namespace creates team namespace i with what kube-controller-manager and the team put in it.
func (s *seeder) namespace(ctx context.Context, i int) error {
	name := nsName(i)
	c := s.kube.CoreV1()
	writes := []func() error{
		func() error {
			_, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name, "team": name, "env": "prod"},
			}}, metav1.CreateOptions{})
			return err
		},
		// What kube-controller-manager puts in every namespace.
		func() error {
			_, err := c.ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
				metav1.CreateOptions{FieldManager: managerKCM})
			return err
		},
		func() error {
			_, err := c.ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
				Data:       map[string]string{"ca.crt": fakeCABundle},
			}, metav1.CreateOptions{FieldManager: managerKCM})
			return err
		},
		func() error {
			_, err := c.Secrets(name).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "registry-credentials"},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com":{"auth":"YmVuY2g6YmVuY2g="}}}`)},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.Services(name).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "frontend", Labels: map[string]string{"app.kubernetes.io/name": "frontend"}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": "frontend"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, w := range writes {
		if err := retry(ctx, w); err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
		s.created.Add(1)
	}
	return nil
}

// node creates node i with the status its kubelet reports and its heartbeat Lease; the first
// deadNodes stopped heartbeating an hour ago.
func (s *seeder) node(ctx context.Context, i int) error {
	name := nodeName(i)
	dead := i < deadNodes
	heartbeat := metav1.NewTime(time.Now())
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: heartbeat, LastTransitionTime: metav1.NewTime(s.base.Add(-72 * time.Hour))}
	var taints []corev1.Taint
	if dead {
		heartbeat = metav1.NewTime(time.Now().Add(-time.Hour))
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat}
		taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &heartbeat}}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m6i.4xlarge", "topology.kubernetes.io/zone": "zone-" + strconv.Itoa(i%3),
			"topology.kubernetes.io/region": "region-1", poolLabel: poolName(i / groupSize),
		}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), Taints: taints},
	}
	var created *corev1.Node
	if err := retry(ctx, func() (err error) {
		created, err = s.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	s.created.Add(1)
	if created != nil {
		quantity := func(v string) resource.Quantity { return resource.MustParse(v) }
		created.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: quantity("16"), corev1.ResourceMemory: quantity("64Gi"), corev1.ResourcePods: quantity("250"), corev1.ResourceEphemeralStorage: quantity("200Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: quantity("15890m"), corev1.ResourceMemory: quantity("62Gi"), corev1.ResourcePods: quantity("250"), corev1.ResourceEphemeralStorage: quantity("180Gi")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				ready,
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", ContainerRuntimeVersion: "containerd://2.1.4", OSImage: "Ubuntu 24.04.2 LTS",
				KernelVersion: "6.8.0-1021-aws", OperatingSystem: "linux", Architecture: "amd64", MachineID: hash10(name) + hash10(name+"m"), SystemUUID: hash10(name + "u")},
			Images: []corev1.ContainerImage{
				{Names: []string{"registry.example.com/shop/app@sha256:" + sha64("app:v2.14.3"), "registry.example.com/shop/app:v2.14.3"}, SizeBytes: 187_000_000},
				{Names: []string{"registry.example.com/mesh/proxy:v1.22.0"}, SizeBytes: 64_000_000},
				{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320_000},
			},
		}
		if err := retry(ctx, func() error {
			_, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: managerKubelet})
			return err
		}); err != nil {
			return fmt.Errorf("node %s status: %w", name, err)
		}
		s.created.Add(1)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: heartbeat.Time}},
	}
	if err := retry(ctx, func() error {
		_, err := s.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("node lease %s: %w", name, err)
	}
	s.created.Add(1)
	return nil
}

// kruiseManager is the OpenKruise manager's Deployment, so the checks find the controller's
// version and flags the way they would in a cluster running OpenKruise.
func (s *seeder) kruiseManager(ctx context.Context) error {
	const ns = "kruise-system"
	if err := retry(ctx, func() error {
		_, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	labels := map[string]string{"control-plane": "controller-manager"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-controller-manager", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "manager", Image: "openkruise/kruise-manager:v1.8.0",
					Args: []string{"--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000", "--logtostderr=true", "--leader-election-namespace=kruise-system", "--v=4", "--feature-gates=", "--sync-period=0"},
				}}},
			},
		},
	}
	return retry(ctx, func() error {
		_, err := s.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// fakeCABundle has the size of a real CA bundle; it is not a valid certificate.
var fakeCABundle = "-----BEGIN CERTIFICATE-----\n" + func() string {
	var b []byte
	for i := 0; len(b) < 1100; i++ {
		b = append(b, hash10(strconv.Itoa(i))...)
		if i%6 == 5 {
			b = append(b, '\n')
		}
	}
	return string(b)
}() + "\n-----END CERTIFICATE-----\n"
