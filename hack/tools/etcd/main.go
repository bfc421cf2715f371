// Command etcd is the etcd server, built from the etcd server module so tests need no prebuilt binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
