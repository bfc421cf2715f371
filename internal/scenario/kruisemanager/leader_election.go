package kruisemanager

import (
	"context"
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// tick is one round of the replicas' leader election, as controller-runtime runs it over the
// Lease: the leader renews while its pod runs; otherwise a Running replica takes an expired Lease.
func (m *Manager) tick(ctx context.Context) {
	m.mu.Lock()
	p := m.leader
	m.mu.Unlock()
	if p != nil {
		alive, err := m.podRunning(ctx, p.pod)
		if err != nil {
			return
		}
		if !alive {
			// The container got SIGTERM: the process ends, and with it everything it kept in memory.
			m.logf("kruise-manager: leader pod %s/%s is going away; its Lease stays until it expires", Namespace, p.pod)
			m.stopLeader()
			return
		}
		if err := m.renew(ctx, p.identity); err != nil {
			m.logf("kruise-manager: renew Lease: %v", err)
		}
		return
	}
	m.tryAcquire(ctx)
}

// podRunning reports whether the manager pod's process would still run: the pod exists and is
// not being deleted.
func (m *Manager) podRunning(ctx context.Context, name string) (bool, error) {
	pod, err := m.kube.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return pod.DeletionTimestamp == nil, nil
}

func (m *Manager) renew(ctx context.Context, identity string) error {
	lease, err := m.kube.CoordinationV1().Leases(Namespace).Get(ctx, leaderLease, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != identity {
		m.logf("kruise-manager: lost the Lease to %v", lease.Spec.HolderIdentity)
		m.stopLeader()
		return nil
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	_, err = m.kube.CoordinationV1().Leases(Namespace).Update(ctx, lease, metav1.UpdateOptions{FieldManager: managerFieldManager})
	return err
}

// tryAcquire takes the Lease for a Running manager pod once nobody holds it validly.
func (m *Manager) tryAcquire(ctx context.Context) {
	leases := m.kube.CoordinationV1().Leases(Namespace)
	lease, err := leases.Get(ctx, leaderLease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = nil
	case err != nil:
		return
	}
	now := time.Now()
	if lease != nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && lease.Spec.RenewTime != nil {
		dur := leaseDuration
		if lease.Spec.LeaseDurationSeconds != nil {
			dur = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		}
		if now.Before(lease.Spec.RenewTime.Add(dur)) {
			return // a holder, alive or not, still has it
		}
	}
	pod, err := m.candidate(ctx)
	if err != nil || pod == "" {
		return
	}
	identity := pod + "_" + string(uuid.NewUUID())
	secs := int32(leaseDuration / time.Second)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &secs,
		AcquireTime: &metav1.MicroTime{Time: now}, RenewTime: &metav1.MicroTime{Time: now}}
	if lease == nil {
		zero := int32(0)
		spec.LeaseTransitions = &zero
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaderLease, Namespace: Namespace}, Spec: spec},
			metav1.CreateOptions{FieldManager: managerFieldManager})
	} else {
		n := int32(1)
		if lease.Spec.LeaseTransitions != nil {
			n = *lease.Spec.LeaseTransitions + 1
		}
		spec.LeaseTransitions = &n
		lease.Spec = spec
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: managerFieldManager})
	}
	if err != nil {
		return
	}
	p, err := m.startLeader(ctx, pod, identity)
	if err != nil {
		m.logf("kruise-manager: start the leader in pod %s: %v", pod, err)
		return
	}
	m.mu.Lock()
	m.leader = p
	m.mu.Unlock()
	m.logf("kruise-manager: pod %s/%s leads (Lease %s/%s, holder %s)", Namespace, pod, Namespace, leaderLease, identity)
}

// candidate is the oldest Running, Ready manager pod that is not being deleted.
func (m *Manager) candidate(ctx context.Context) (string, error) {
	list, err := m.kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	if err != nil {
		return "", err
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && PodReady(&p) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return "", nil
	}
	sort.Slice(pods, func(i, j int) bool {
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		}
		return pods[i].Name < pods[j].Name
	})
	return pods[0].Name, nil
}
