package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"mailbolt/storage"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "mailbolt",
		Short:         "Self-hosted transactional email in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags())
		},
	}
	root.PersistentFlags().String("data-dir", "./data", "directory holding mailbolt.db and the management socket")
	root.PersistentFlags().String("secret-key-file", "", "file holding the key that seals the secrets in mailbolt.db (default <data-dir>/secret.key, created at first start)")
	root.PersistentFlags().String("database", "", "postgres:// URL of a shared PostgreSQL database (default: the embedded file in --data-dir); give the password through MAILBOLT_DATABASE or PGPASSFILE")
	root.PersistentFlags().Bool("database-insecure", false, "allow a non-loopback --database host without sslmode=verify-full")
	root.AddCommand(newServeCommand(), newAccountsCommand(), newKeysCommand(), newTeamCommand(),
		newIPsCommand(), newPoolsCommand(), newSuppressionsCommand(), newBackupCommand(), newRestoreCommand(), newVersionCommand())
	root.AddCommand(newSecretsCommand(), newMigrateCommand())
	root.AddCommand(newBenchCommand(), newBenchClientCommand(), newHealthcheckCommand(), newDoctorCommand())
	return root
}

// applyEnv gives every flag not set on the command line the value of its
// environment variable MAILBOLT_<FLAG> (dashes to underscores, upper case).
func applyEnv(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		name := envVarOf(f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if serr := flags.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s: %w", name, serr)
			}
		}
	})
	return err
}

// envVarOf is the environment variable of the flag named name (without
// its dashes): MAILBOLT_<FLAG>.
func envVarOf(name string) string {
	return "MAILBOLT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the source revision it was built from, the Go version and the database schema version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, "mailbolt", version)
			info, ok := debug.ReadBuildInfo()
			settings := map[string]string{}
			if ok {
				for _, s := range info.Settings {
					settings[s.Key] = s.Value
				}
			}
			if rev := settings["vcs.revision"]; rev != "" {
				if settings["vcs.modified"] == "true" {
					rev += " (with uncommitted changes)"
				}
				fmt.Fprintln(out, "revision:", rev)
				if at := settings["vcs.time"]; at != "" {
					fmt.Fprintln(out, "revision time:", at)
				}
			} else {
				fmt.Fprintln(out, "revision: unknown (built without version control information)")
			}
			fmt.Fprintln(out, "go:", runtime.Version())
			fmt.Fprintln(out, "schema version:", storage.LatestSchemaVersion())
			return nil
		},
	}
}
