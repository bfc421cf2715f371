package terminating

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestLoadBalancerCleanup(t *testing.T) {
	lb := func(opts ...checktest.Option) *corev1.Service {
		return checktest.LoadBalancerService("shop", "target", append([]checktest.Option{checktest.DeletedSince(20 * time.Minute)}, opts...)...)
	}
	world := func(s *corev1.Service, evs ...*corev1.Event) checktest.Cluster {
		return checktest.Cluster{DeletedServices: []*corev1.Service{s}, Objects: []snapshot.Object{checktest.ServiceObject(s)}, Events: evs}
	}
	class := "example.com/internal-lb"
	cases := []struct {
		name  string
		world func() checktest.Cluster
		want  want
	}{
		{name: "no service controller ever acted", world: func() checktest.Cluster { return world(lb()) },
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, summary: []string{"no service controller ever acted"},
				evidence: []string{"status.loadBalancer.ingress []"}, message: []string{"may run no cloud-controller-manager"}}},
		{name: "the cloud provider fails to delete it",
			world: func() checktest.Cluster {
				s := lb()
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
				return world(s, eventAbout(checktest.RefTo("v1", "Service", s), corev1.EventTypeWarning, "DeletingLoadBalancerFailed",
					"service-controller", "Error deleting load balancer: AccessDenied", 12, time.Minute))
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, summary: []string{"fails to delete the load balancer (DeletingLoadBalancerFailed)"},
				evidence: []string{"203.0.113.7", "AccessDenied"}, message: []string{"still billed"}}},
		{name: "a load balancer class names its controller",
			world: func() checktest.Cluster {
				s := lb()
				s.Spec.LoadBalancerClass = &class
				return world(s)
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, summary: []string{"the load balancer controller of class example.com/internal-lb has not deleted"},
				evidence: []string{"spec.loadBalancerClass example.com/internal-lb"}}},
		{name: "near miss: within the threshold", world: func() checktest.Cluster {
			s := lb()
			checktest.DeletedSince(time.Minute)(s)
			return world(s)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := New().Run(c.world().Snapshot(), 5*time.Minute)
			expect(t, fs, "target", c.want)
		})
	}
}

func TestJobTrackingNamesTheJob(t *testing.T) {
	w := healthy()
	job := checktest.Object(checktest.Jobs, "Job", "shop", "report", checktest.UID("uid-job-report"), checktest.DeletedSince(20*time.Minute))
	p := checktest.Pod("shop", "target", checktest.OwnedBy("batch/v1", "Job", "report", "uid-job-report"), checktest.OnNode("node-a"),
		checktest.Deleted(9*time.Minute, 0), checktest.Phase(corev1.PodSucceeded), checktest.Finalizers("kube-controller-manager", finJobTracking))
	w.Pods = []*corev1.Pod{p}
	w.Objects = []snapshot.Object{job}
	fs := New().Run(w.Snapshot(), 5*time.Minute)
	expect(t, fs, "target", want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a",
		summary:  []string{"the Job controller has not released the pod (Job shop/report, Deleting)"},
		evidence: []string{"phase Succeeded, owner: Job shop/report, Deleting"}, message: []string{"miscount"}})
}

func TestVolumeDetach(t *testing.T) {
	world := func(va *storagev1.VolumeAttachment) checktest.Cluster {
		c := healthy()
		c.DeletedAttachments = []*storagev1.VolumeAttachment{va}
		c.Objects = []snapshot.Object{checktest.AttachmentObject(va)}
		return c
	}
	failing := checktest.VolumeAttachment("target", "ebs.csi.aws.com", "pv-data", "node-a", checktest.DeletedSince(20*time.Minute))
	failing.Status.DetachError = &storagev1.VolumeError{Time: metav1.NewTime(checktest.Ago(time.Minute)),
		Message: "rpc error: code = Internal desc = could not detach volume \"vol-0abc\" from node \"i-0123\": IncorrectState"}
	expect(t, New().Run(world(failing).Snapshot(), 5*time.Minute), "target", want{rootCause: RootCauseFinalizerOwnerNotActing,
		summary:  []string{"ebs.csi.aws.com cannot detach the volume"},
		evidence: []string{"attacher ebs.csi.aws.com, PersistentVolume pv-data on node node-a (Ready=True), status.attached true", "IncorrectState"},
		message:  []string{"external-attacher"}})

	silent := checktest.VolumeAttachment("target", "ebs.csi.aws.com", "pv-data", "node-a", checktest.DeletedSince(20*time.Minute))
	expect(t, New().Run(world(silent).Snapshot(), 5*time.Minute), "target", want{rootCause: RootCauseFinalizerOwnerNotActing,
		summary: []string{"has not detached the volume and records no error"}})
}
