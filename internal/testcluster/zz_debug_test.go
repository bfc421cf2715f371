package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestZZDebugOld(t *testing.T) {
	if os.Getenv("WD_DEBUG") == "" {
		t.Skip()
	}
	tools, _ := ToolsDir()
	c := Start(t, Options{APIServerBinary: filepath.Join(tools, "v1.32.2", "kube-apiserver"), FeatureGates: "InPlacePodVerticalScaling=true"})
	c.InstallCRDs(t)
	v, err := c.Clientset().Discovery().ServerVersion()
	t.Log(v, err)
	kc := c.UserKubeconfigInNamespace(t, "team", "alice", "devs")
	out, err := exec.Command(filepath.Join(tools, "kubectl"), "--kubeconfig", kc, "auth", "whoami").CombinedOutput()
	t.Logf("%s %v", out, err)
	out, err = exec.Command(filepath.Join(tools, "kubectl"), "--kubeconfig", kc, "get", "pods").CombinedOutput()
	t.Logf("%s %v", out, err)
	out, err = exec.Command(filepath.Join(tools, "kubectl"), "--kubeconfig", c.Kubeconfig, "get", "asts,clone,cl,ma,ads,sidecarsets", "-A").CombinedOutput()
	t.Logf("%s %v", out, err)
}
