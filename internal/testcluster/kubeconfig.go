package testcluster

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a single-context kubeconfig for a client certificate minted for user/groups.
func (c *Cluster) writeKubeconfig(path, namespace, user string, groups ...string) error {
	certPEM, keyPEM, err := c.ca.issue(user, groups, false)
	if err != nil {
		return err
	}
	const name = "testcluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.APIServerURL, CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// UserKubeconfig writes a kubeconfig authenticating as user (with groups) by a client certificate
// the cluster CA signs, and returns its path. The user has no rights until the test grants some.
func (c *Cluster) UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	return c.UserKubeconfigInNamespace(t, "", user, groups...)
}

// UserKubeconfigInNamespace is UserKubeconfig with the context's default namespace set, as kubectl
// and the plugin read it when -n is not given. UserKubeconfigInNamespace(t, ns, "admin",
// "system:masters") gives an admin kubeconfig in ns.
func (c *Cluster) UserKubeconfigInNamespace(t testing.TB, namespace, user string, groups ...string) string {
	t.Helper()
	name := sanitize(user)
	if namespace != "" {
		name += "-" + sanitize(namespace)
	}
	path := c.path(name + ".kubeconfig")
	for i := 1; fileExists(path); i++ {
		path = c.path(fmt.Sprintf("%s-%d.kubeconfig", name, i))
	}
	if err := c.writeKubeconfig(path, namespace, user, groups...); err != nil {
		t.Fatalf("write kubeconfig for %s: %v", user, err)
	}
	return path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
