package checktest

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Deployment is a Deployment of one container with its rollout status: replicas wanted,
// available ones.
func Deployment(namespace, name, container, image string, replicas, available int32, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-deploy-" + name), Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: container, Image: image, Args: args}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: available,
			AvailableReplicas: available, UpdatedReplicas: replicas},
	}
}

// KruiseHolder is the leader identity KruiseLeaderLease records: the leader pod's name, "_",
// a random suffix.
const KruiseHolder = "kruise-controller-manager-7d9f8b6c5-x2x4k_0b6a2c1e-5d1f-4a8e-9d3c-2f7e1b0a9c8d"

// KruiseManager is the kruise-manager Deployment as the Helm chart installs it, one replica of
// which `available` are available; args add to the chart's.
func KruiseManager(version string, available int32, args ...string) *appsv1.Deployment {
	d := Deployment("kruise-system", "kruise-controller-manager", "manager", "openkruise/kruise-manager:"+version, 1, available,
		append([]string{"--enable-leader-election", "--metrics-addr=:8080", "--leader-election-namespace=kruise-system", "--v=4"}, args...)...)
	d.Spec.Template.Spec.Containers[0].Command = []string{"/manager"}
	return d
}

// KruiseLeaderLease is the kruise-manager's leader Lease held by KruiseHolder, renewed renewedAgo.
func KruiseLeaderLease(renewedAgo time.Duration) *coordinationv1.Lease {
	return Lease("kruise-system", "kruise-manager", KruiseHolder, 15, renewedAgo)
}

// KwokDeployment is kwok's controller as its shipped kustomization installs it.
func KwokDeployment(version string, args ...string) *appsv1.Deployment {
	return Deployment("kube-system", "kwok-controller", "kwok-controller", "registry.k8s.io/kwok/kwok:"+version, 1, 1,
		append([]string{"--config=/root/.kwok/kwok.yaml", "--node-ip=$(POD_IP)"}, args...)...)
}

// StatefulSet is a StatefulSet of one container with its status: replicas wanted, available ones.
func StatefulSet(namespace, name, container, image string, replicas, available int32) *appsv1.StatefulSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-sts-" + name), Generation: 1},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: container, Image: image}}}}},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: replicas, ReadyReplicas: available,
			AvailableReplicas: available, CurrentReplicas: replicas, UpdatedReplicas: replicas},
	}
}

// DaemonSet is a DaemonSet of one container scheduled on desired nodes, available on available.
func DaemonSet(namespace, name, container, image string, desired, available int32) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-ds-" + name), Generation: 1},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: container, Image: image}}}}},
		Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired, CurrentNumberScheduled: desired,
			NumberReady: available, NumberAvailable: available, UpdatedNumberScheduled: desired},
	}
}
