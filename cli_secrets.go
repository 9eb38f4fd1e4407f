package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"mailbolt/storage"
	"mailbolt/web"
)

// storageOptions are the options every command opens the database with:
// --database (empty: the embedded engine, whose key file, --secret-key-file
// or secret.key in the data dir, is created when missing on a database
// without sealed secrets; PostgreSQL never creates it).
func storageOptions(cmd *cobra.Command) storage.Options {
	o := storage.DefaultOptions()
	o.SecretKeyFile, _ = cmd.Flags().GetString("secret-key-file")
	o.Database, _ = cmd.Flags().GetString("database")
	o.DatabaseInsecure, _ = cmd.Flags().GetBool("database-insecure")
	return o
}

// sharedDatabase reports whether the command was given --database: the
// PostgreSQL engine, reached directly rather than through a server's
// management socket.
func sharedDatabase(cmd *cobra.Command) bool {
	u, _ := cmd.Flags().GetString("database")
	return u != ""
}

// secretKeyFile is the key file a command works with: --secret-key-file,
// or secret.key in --data-dir.
func secretKeyFile(cmd *cobra.Command) string {
	if f, _ := cmd.Flags().GetString("secret-key-file"); f != "" {
		return f
	}
	dataDir, _ := cmd.Flags().GetString("data-dir")
	return filepath.Join(dataDir, storage.SecretKeyFileName)
}

func newSecretsCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "secrets", Short: "Manage the key that seals the secrets stored in mailbolt.db"}
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Seal every stored secret under a new key and write it to the key file (the server, or every node, must be stopped)",
		Long: "Seals the DKIM private keys, webhook signing secrets and the server secret under a new random key, " +
			"in one transaction, then writes the new key to the key file. The old key file is kept beside it as " +
			"<key file>.old-<UTC time> (-2, -3, ... added when that name is taken): backups taken before the rotation open only with it. The secrets themselves " +
			"do not change, so tracking, unsubscribe and bounce links already sent keep verifying. With --database (PostgreSQL) " +
			"it refuses while any node uses the database, naming them: stop every node, rotate once, and give every node " +
			"the new key file before starting it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dataDir, _ := cmd.Flags().GetString("data-dir")
			if _, err := web.DialAdmin(dataDir); err == nil {
				return fmt.Errorf("a server is running on %s: stop it, run `mailbolt secrets rotate`, then start it again "+
					"(a server holds the key in memory, so rotation is offline only)", dataDir)
			}
			kept, err := storage.RotateSecretKey(dataDir, storageOptions(cmd), time.Now())
			if errors.Is(err, storage.ErrNoDatabase) {
				return fmt.Errorf("no database in %s: check --data-dir (or MAILBOLT_DATA_DIR)", dataDir)
			}
			if errors.Is(err, storage.ErrLocked) {
				return fmt.Errorf("the database in %s is in use: stop the server before rotating the secret key", dataDir)
			}
			if errors.Is(err, storage.ErrNodesLive) {
				return fmt.Errorf("%w. Stop every node first (every `mailbolt serve` on the database, and any command run with --database), "+
					"run `mailbolt secrets rotate` once, then give every node the new key file before starting it: "+
					"a node holds the key in memory, and could neither open the re-sealed secrets nor seal new ones", err)
			}
			if err != nil {
				return openFailed(dataDir, err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "secrets re-sealed under a new key, written to %s\n", secretKeyFile(cmd))
			fmt.Fprintf(out, "the old key is kept at %s: backups taken before now open only with it; "+
				"keep it with them, and delete it when none is left\n", kept)
			return nil
		},
	}
	newKey := &cobra.Command{
		Use:   "new-key FILE",
		Short: "Write a new random secret key to FILE (mode 0600; never overwrites): the key every node of a PostgreSQL database is given",
		Long: "The PostgreSQL engine (--database) never creates its secret key file, so that several nodes cannot each make " +
			"their own: make it once with this command before the first start, copy it to every node, and point " +
			"--secret-key-file (or MAILBOLT_SECRET_KEY_FILE) at it. Keep a copy with your database backups.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := storage.WriteNewSecretKey(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote a new secret key to %s: give every node the same file, and keep a copy with your backups\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(rotate, newKey)
	return cmd
}
