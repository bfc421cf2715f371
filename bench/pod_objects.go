package main

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// templateAnnotations are the annotations of every pod template and pod.
func templateAnnotations() map[string]string {
	return map[string]string{
		"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "prometheus.io/path": "/metrics",
		"kubectl.kubernetes.io/default-container": "app",
	}
}

// podSpec is a typical two-container pod: an application (image) and a proxy sidecar, with env,
// ports, probes, resources and the projected service-account token volume the apiserver would add.
func podSpec(gr group, node, image string) corev1.PodSpec {
	quantity := resource.MustParse
	app := gr.labels["app.kubernetes.io/name"]
	env := []corev1.EnvVar{
		{Name: "APP_NAME", Value: app}, {Name: "APP_ENV", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"},
		{Name: "LOG_FORMAT", Value: "json"}, {Name: "HTTP_PORT", Value: "8080"}, {Name: "METRICS_PORT", Value: "9090"},
		{Name: "DB_HOST", Value: "postgres.db.svc.cluster.local"}, {Name: "DB_POOL_SIZE", Value: "20"},
		{Name: "CACHE_URL", Value: "redis://redis.cache.svc.cluster.local:6379/0"},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc:4317"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "password"}}},
	}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	return corev1.PodSpec{
		NodeName: node,
		Containers: []corev1.Container{
			{
				Name: "app", Image: image, Args: []string{"--config=/etc/app/config.yaml", "--listen=:8080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("250m"), corev1.ResourceMemory: quantity("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("1"), corev1.ResourceMemory: quantity("512Mi")},
				},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
					{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
				VolumeMounts: mounts, LivenessProbe: probe("/healthz", 10), ReadinessProbe: probe("/ready", 5),
				TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			},
			{
				Name: "proxy", Image: "registry.example.com/mesh/proxy:v1.22.0", Args: []string{"proxy", "sidecar", "--log-level=warn", "--concurrency=2"},
				Ports: []corev1.ContainerPort{{Name: "proxy-admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}, {Name: "proxy-stats", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "PROXY_CLUSTER_ID", Value: "prod-eu-1"}, {Name: "PROXY_MESH_ID", Value: "shop"},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("100m"), corev1.ResourceMemory: quantity("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("500m"), corev1.ResourceMemory: quantity("256Mi")},
				},
				VolumeMounts:           mounts[1:],
				ReadinessProbe:         probe("/healthz/ready", 1),
				TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			},
		},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, DefaultMode: ptr.To[int32](0o644)}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}},
		},
		RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
		ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
		SchedulerName: corev1.DefaultSchedulerName, PriorityClassName: "", EnableServiceLinks: ptr.To(false),
		Tolerations: []corev1.Toleration{
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: gr.selector()}}},
	}
}

// podStatus is what a kubelet reports for a pod running since started, its app container in
// state.
func podStatus(p *corev1.Pod, i int, started time.Time, state podState) corev1.PodStatus {
	at := metav1.NewTime(started)
	ip := podIP(i)
	hostIP := fmt.Sprintf("10.0.%d.%d", (i%nodes)/256, (i%nodes)%256)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	cs := func(c corev1.Container, restarts int32) corev1.ContainerStatus {
		name, image := c.Name, c.Image
		return corev1.ContainerStatus{Name: name, Ready: true, Started: ptr.To(true), RestartCount: restarts, Image: image,
			ImageID:     image + "@sha256:" + sha64(image),
			ContainerID: "containerd://" + sha64(p.Name+"/"+name),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
			Resources:   &corev1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
				RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)}},
		}
	}
	conds := []corev1.PodCondition{cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)}
	if len(p.Spec.ReadinessGates) > 0 {
		conds = append(conds, cond(kruise.ConditionInPlaceReady))
	}
	st := corev1.PodStatus{
		Phase: corev1.PodRunning, Conditions: conds, HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &at, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{cs(p.Spec.Containers[0], int32(i%3)), cs(p.Spec.Containers[1], 0)},
	}
	if state == podRunning {
		return st
	}
	// The app container is not ready, and so neither is the pod (kubelet's generateAPIPodStatus
	// and getPhase, pkg/kubelet/kubelet_pods.go): a container waiting to be created for the first
	// time leaves the pod Pending; one waiting to restart leaves it Running.
	app := &st.ContainerStatuses[0]
	app.Ready, app.Started, app.Resources = false, ptr.To(false), nil
	for c := range st.Conditions {
		if t := st.Conditions[c].Type; t == corev1.PodReady || t == corev1.ContainersReady {
			st.Conditions[c].Status, st.Conditions[c].Reason = corev1.ConditionFalse, "ContainersNotReady"
			st.Conditions[c].Message = "containers with unready status: [app]"
		}
	}
	switch state {
	case podImagePullBackOff:
		st.Phase = corev1.PodPending
		app.ImageID, app.ContainerID, app.RestartCount, app.VolumeMounts = "", "", 0, nil
		app.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
			Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", app.Image, pullError(app.Image))}}
	case podCrashLoop:
		app.RestartCount = 12
		app.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off 5m0s restarting failed container=app pod=%s_%s(%s)", p.Name, p.Namespace, p.UID)}}
		app.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: metav1.NewTime(started.Add(40 * time.Minute)), FinishedAt: metav1.NewTime(started.Add(40*time.Minute + 2*time.Second)),
			ContainerID: app.ContainerID}}
	}
	return st
}

// pullError is the registry's answer for an image it does not have, as containerd reports it.
func pullError(image string) string {
	return fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found",
		image, image, image)
}
