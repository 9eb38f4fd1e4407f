package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/storage"
	"mailbolt/web"
)

// `mailbolt migrate`: the embedded database into an empty PostgreSQL one
// (storage/copy.go does the copy and the verification).
func newMigrateCommand() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Copy the embedded database of a data dir into an empty PostgreSQL database, and verify the copy",
		Long: "Copies every record of --from-data-dir's mailbolt.db (accounts, keys, domains, templates, messages and " +
			"their queue, events, webhooks and deliveries, suppressions, IPs, grader results, the server secret: " +
			"every bucket, key and value) into the PostgreSQL database --to, in one transaction, then compares " +
			"every bucket's key count and checksum in both before committing. The target must be empty (no node " +
			"has started on it); a failed or interrupted run commits nothing, so it can be run again. The server " +
			"on the data dir must be stopped. Secrets are copied sealed: every node of the new database needs the " +
			"same secret key file (--secret-key-file, default <from-data-dir>/secret.key).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --to defaults to --database (MAILBOLT_DATABASE), so that the
			// URL with its password need not be on the command line.
			if db, _ := cmd.Flags().GetString("database"); db != "" {
				if to != "" && to != db {
					return errors.New("--to and --database (MAILBOLT_DATABASE) name different databases: give the target once, as --to")
				}
				to = db
			}
			if to == "" {
				return errors.New("--to: give the postgres:// URL of the empty target database (or set MAILBOLT_DATABASE)")
			}
			if !storage.IsPostgresURL(to) {
				return fmt.Errorf("--to: %q is not a postgres:// URL", storage.RedactURL(to))
			}
			if _, err := web.DialAdmin(from); err == nil {
				return fmt.Errorf("a server is running on %s: stop it, then migrate (its database must not change during the copy)", from)
			}
			opts := storageOptions(cmd)
			opts.Database = to
			if opts.SecretKeyFile == "" {
				opts.SecretKeyFile = filepath.Join(from, storage.SecretKeyFileName)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "migrating %s to %s\n", filepath.Join(from, storage.FileName), storage.RedactURL(to))

			var mu sync.Mutex
			var phase, bucket string
			var done, total int
			prog := startProgress(cmd.ErrOrStderr(), func(elapsed time.Duration) string {
				mu.Lock()
				defer mu.Unlock()
				return fmt.Sprintf("migrate: %s %s: %s of %s keys, %s", phase, bucket, formatCount(int64(done)), formatCount(int64(total)), formatElapsed(elapsed))
			})
			rep, err := storage.MigrateToPostgres(cmd.Context(), from, opts, func(p, b string, d, t int) {
				mu.Lock()
				phase, bucket, done, total = p, b, d, t
				mu.Unlock()
			})
			prog.Done("")
			switch {
			case errors.Is(err, storage.ErrNoDatabase):
				return fmt.Errorf("no database in %s: check --from-data-dir", from)
			case errors.Is(err, storage.ErrLocked):
				return fmt.Errorf("the database in %s is in use: stop the server running on it, then migrate", from)
			case err != nil && strings.HasPrefix(err.Error(), "--database"):
				return errors.New("--to" + strings.TrimPrefix(err.Error(), "--database"))
			case err != nil:
				return openFailed(from, err)
			}

			fmt.Fprintf(out, "%-28s %10s %13s %9s  %s\n", "bucket", "keys", "bytes", "sequence", "verified")
			for _, b := range rep.Buckets {
				ok := "no"
				if b.Verified {
					ok = "yes"
				}
				fmt.Fprintf(out, "%-28s %10s %13s %9d  %s\n", b.Name, formatCount(int64(b.Keys)), formatCount(b.Bytes), b.Sequence, ok)
			}
			fmt.Fprintf(out, "verified: %d buckets, %s keys (%s), the same key count, sequence and checksum in each; committed in %s\n",
				len(rep.Buckets), formatCount(int64(rep.Keys)), humanBytes(uint64(rep.Bytes)), rep.Elapsed.Round(10*time.Millisecond))
			fmt.Fprintf(out, "the secrets stay sealed under the key in %s: every node needs a copy of that file\n", rep.SecretKeyFile)
			insecure := ""
			if opts.DatabaseInsecure {
				insecure = " --database-insecure"
			}
			fmt.Fprintf(out, "next: start serve on every node with --database %s%s --secret-key-file %s (the same key file on every node); "+
				"%s is no longer used: keep it as a backup, and do not start serve on it again\n",
				storage.RedactURL(to), insecure, rep.SecretKeyFile, from)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from-data-dir", "", "data directory holding the embedded database to copy (required; its server stopped)")
	cmd.Flags().StringVar(&to, "to", "", "postgres:// URL of the empty target database (default --database); give the password through MAILBOLT_DATABASE, MAILBOLT_TO or PGPASSFILE")
	cmd.MarkFlagRequired("from-data-dir")
	return cmd
}
