package kruisemanager

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// CreateInjectedPod creates the pod as kruise's pod webhook (mpod.kb.io,
// pkg/webhook/pod/mutating/sidecarset.go, v1.9.0) admits it: every SidecarSet selecting it adds
// its containers (marked IS_INJECTED), and the pod records the SidecarSets in
// kruise.io/sidecarset-injected-list and their hashes in kruise.io/sidecarset-hash and
// -without-image. The stand-in runs no webhook, so pods that SidecarSets select are created
// through this, already injected.
func (m *Manager) CreateInjectedPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	list, err := m.dyn.Resource(kruise.SidecarSets).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list SidecarSets: %w", err)
	}
	pod = pod.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	now := metav1.Now()
	var names []string
	for i := range list.Items {
		ss, err := decodeSidecarSet(&list.Items[i])
		if err != nil || !ss.selects(pod) {
			continue
		}
		hash, noImage, err := sidecarHashes(ss.Spec.Containers)
		if err != nil {
			return nil, err
		}
		for _, c := range ss.Spec.Containers {
			if containerNamed(pod, c.Name) == nil {
				c.Env = append(c.Env, corev1.EnvVar{Name: "IS_INJECTED", Value: "true"})
				pod.Spec.Containers = append(pod.Spec.Containers, c)
			}
		}
		setPodRevision(pod, kruise.AnnotationSidecarHash, ss, hash, now)
		setPodRevision(pod, annotationSidecarHashNoImage, ss, noImage, now)
		names = append(names, ss.Name)
	}
	if len(names) > 0 {
		sort.Strings(names)
		pod.Annotations[kruise.AnnotationSidecarInjects] = strings.Join(names, ",")
	}
	out, err := m.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}

// podVerbosity is the klog verbosity (--v) the manager container of the pod runs with: what the
// leader started in it logs with klog.V. klog's default is 0.
func (m *Manager) podVerbosity(ctx context.Context, name string) int {
	pod, err := m.kube.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	v := 0
	for _, c := range pod.Spec.Containers {
		if c.Name != Container {
			continue
		}
		for _, a := range c.Args {
			for _, p := range []string{"--v=", "-v="} {
				if n, err := strconv.Atoi(strings.TrimPrefix(a, p)); strings.HasPrefix(a, p) && err == nil {
					v = n
				}
			}
		}
	}
	return v
}
