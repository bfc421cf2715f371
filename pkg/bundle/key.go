// Package bundle records the API answers a scan reads into a bundle (`capture`) and opens a
// bundle into a source.Source whose transport answers the same requests from the recording, so
// that a scan offline gives the findings the capture's live scan gave.
package bundle

import (
	"net/http"
	"net/url"
	"strings"
)

// Key names a request in a recording: its method, its path below the server's own path (a
// kubeconfig may point at a proxy such as https://host/k8s/clusters/c-1), its query with the
// parameters sorted, and its Accept header, which chooses between a list, a metadata-only list
// and a table of the same path. The timeout parameter is left out: client-go adds it from the
// request timeout, which has nothing to do with the answer.
func Key(req *http.Request, prefix string) string {
	path := strings.TrimPrefix(req.URL.Path, prefix)
	q := req.URL.Query()
	q.Del("timeout")
	key := req.Method + " " + path
	if enc := q.Encode(); enc != "" { // Encode sorts by parameter
		key += "?" + enc
	}
	return key + " " + req.Header.Get("Accept")
}

// pathPrefix is the path of a server address, without its trailing slash.
func pathPrefix(host string) string {
	u, err := url.Parse(host)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.Path, "/")
}
