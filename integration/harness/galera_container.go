//go:build unix

package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// containerGaleraProvider is where Debian's galera-4 (and the official mariadb image) put
// the provider library.
const containerGaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// galeraArgs are a container's Galera options: the members reach each other by container
// name over the cluster network, on Galera's default ports (4567 group communication, 4568
// IST, 4444 SST), which are not published. Nil for a node of no Galera cluster.
func (b *ContainerBackend) galeraArgs(spec NodeSpec) []string {
	g := spec.Galera
	if g == nil {
		return nil
	}
	peers := make([]string, g.Nodes)
	for k := range peers {
		peers[k] = b.containerName(k + 1)
	}
	return galeraServerArgs(spec, containerGaleraProvider, peers, b.containerName(spec.Index), "", "")
}

// containerName is node i's container name, also its host name on the cluster network.
func (b *ContainerBackend) containerName(i int) string {
	return fmt.Sprintf("mysqlfailover-%s-n%d", b.id, i)
}

// galeraTemplateArgs make the template's server a one-node cluster of its own.
func (b *ContainerBackend) galeraTemplateArgs() []string {
	return []string{
		"--wsrep-on=ON", "--wsrep-provider=" + containerGaleraProvider, "--wsrep-cluster-address=gcomm://",
		"--wsrep-new-cluster", "--wsrep-provider-options=" + galeraTuning,
		"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--wsrep-gtid-mode=ON",
	}
}

// tarOwner returns the owner of the entry name in the tar data (the template's mysql
// directory: the image's mysql user), or 0, 0.
func tarOwner(data []byte, name string) (uid, gid int) {
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err != nil {
			return 0, 0
		}
		if strings.TrimSuffix(h.Name, "/") == name {
			return h.Uid, h.Gid
		}
	}
}

// copyFileAs writes content to file (an absolute path) in the container, owned by
// uid:gid with mode. The container may be stopped.
func (i *containerInstance) copyFileAs(ctx context.Context, file, content string, uid, gid int, mode int64) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: path.Base(file), Mode: mode, Size: int64(len(content)),
		Uid: uid, Gid: gid, ModTime: time.Now(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, content); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if _, err := i.b.cli.CopyToContainer(ctx, i.c.ID, client.CopyToContainerOptions{
		DestinationPath: path.Dir(file), Content: &buf, CopyUIDGID: true,
	}); err != nil {
		return fmt.Errorf("copy %s into %s: %w", file, i.name, err)
	}
	return nil
}

// copyFile writes a file of the data directory, owned as the template's mysql directory.
func (i *containerInstance) copyFile(ctx context.Context, file, content string, template []byte) error {
	uid, gid := tarOwner(template, "mysql")
	return i.copyFileAs(ctx, file, content, uid, gid, 0o660)
}

// readFile reads one file out of the container (it may be stopped), with its tar header.
func (i *containerInstance) readFile(ctx context.Context, file string) (string, *tar.Header, error) {
	res, err := i.b.cli.CopyFromContainer(ctx, i.c.ID, client.CopyFromContainerOptions{SourcePath: file})
	if err != nil {
		return "", nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return "", nil, fmt.Errorf("read %s from %s: %w", file, i.name, err)
	}
	b, err := io.ReadAll(tr)
	return string(b), h, err
}

// recoverGalera runs after a Kill, before the container starts again: mariadbd
// --wsrep-recover, in a one-off container of the same image on the node's volume, reads
// the position InnoDB has committed, and the harness writes it into the node's
// grastate.dat (seqno -1 after a kill), so the node rejoins by IST. A saved state with a
// seqno (a clean stop), or none (forgetState), is left as it is.
func (i *containerInstance) recoverGalera(ctx context.Context) error {
	const file = "/var/lib/mysql/grastate.dat"
	content, h, err := i.readFile(ctx, file)
	if err != nil {
		return nil // no saved state: nothing to recover
	}
	g, err := parseGrastate(content)
	if err != nil || g.seqno != -1 || g.uuid == zeroGrastate.uuid {
		return nil
	}
	begin := time.Now()
	log, err := i.b.runOnce(ctx, i.name+"-recover", i.vol, append(append([]string(nil), i.cmd...), "--wsrep-recover"))
	if err != nil {
		return fmt.Errorf("mariadbd --wsrep-recover: %w", err)
	}
	uuid, seqno, err := recoveredPosition(log)
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(log, 15))
	}
	if uuid != zeroGrastate.uuid {
		g.uuid = uuid
	}
	g.seqno = seqno
	if err := i.copyFileAs(ctx, file, g.String(), h.Uid, h.Gid, 0o660); err != nil {
		return err
	}
	i.b.logf("harness: %s: --wsrep-recover found %s:%d in %v", i.name, g.uuid, seqno, time.Since(begin).Round(time.Millisecond))
	return nil
}

// donorConfig is the option file forgetState puts into the image's configuration
// directory (Debian's and the official image's my.cnf include it): the container's
// arguments cannot change after it is created.
const donorConfig = "/etc/mysql/mariadb.conf.d/99-mysqlfailover-sst-donor.cnf"

// forgetState resets the stopped node's saved state so that its next start asks donor
// (or any node) for a full state transfer.
func (i *containerInstance) forgetState(ctx context.Context, donor string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || i.running {
		return errors.New("harness: forget the Galera state of a running or removed container")
	}
	if i.spec.Galera == nil {
		return errors.New("harness: not a Galera node")
	}
	const file = "/var/lib/mysql/grastate.dat"
	_, h, err := i.readFile(ctx, file)
	if err != nil {
		return err
	}
	if err := i.copyFileAs(ctx, file, zeroGrastate.String(), h.Uid, h.Gid, 0o660); err != nil {
		return err
	}
	cnf := "[mariadbd]\n"
	if donor != "" {
		cnf += "wsrep_sst_donor=" + donor + ",\n"
	}
	return i.copyFileAs(ctx, donorConfig, cnf, 0, 0, 0o644) // the server, as mysql, reads it
}

// runOnce runs a container of the backend's image with args on volume vol (mounted as the
// data directory), without a network, waits until it exits and returns its output.
func (b *ContainerBackend) runOnce(ctx context.Context, name, vol string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:  b.image,
			Name:   name,
			Env:    map[string]string{"MARIADB_ROOT_PASSWORD": containerPassword, "MYSQL_ROOT_PASSWORD": containerPassword},
			Cmd:    args,
			Labels: maps.Clone(b.labels),
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.NetworkMode = "none"
				hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: vol, Target: "/var/lib/mysql"})
			},
		},
		Started: false,
		Logger:  tclog.NewNoopLogger(),
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if ctr == nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	dc, _ := ctr.(*testcontainers.DockerContainer)
	defer b.cli.ContainerRemove(context.Background(), ctr.GetContainerID(), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := b.cli.ContainerStart(ctx, ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	w := b.cli.ContainerWait(ctx, ctr.GetContainerID(), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		return "", fmt.Errorf("wait for %s: %w", name, err)
	}
	if dc == nil {
		return "", fmt.Errorf("%s: not a Docker container", name)
	}
	rc, err := dc.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of %s: %w", name, err)
	}
	defer rc.Close()
	out, err := io.ReadAll(rc)
	return string(out), err
}

var _ galeraInstance = (*containerInstance)(nil)
