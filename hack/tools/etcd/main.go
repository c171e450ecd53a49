// Command etcd is upstream etcd's server entry point, built from the pinned module
// so tests and the local control plane do not need a release download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
