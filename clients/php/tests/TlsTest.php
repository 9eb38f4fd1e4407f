<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Client;
use Mailbolt\Exception\ConnectionException;
use PHPUnit\Framework\TestCase;

/**
 * HTTPS with an extra root given as ca_file (MAILBOLT_CA_FILE), against
 * `openssl s_server -www` and a throwaway self-signed certificate; skipped
 * when the openssl command is missing. The server's page names the protocol.
 */
final class TlsTest extends TestCase
{
    private static string $dir;
    /** @var resource|null */
    private static $proc = null;
    private static string $base;

    public static function setUpBeforeClass(): void
    {
        if (trim((string) shell_exec('command -v openssl')) === '') {
            return;
        }
        self::$dir = sys_get_temp_dir() . '/mailbolt-php-tls-' . bin2hex(random_bytes(4));
        mkdir(self::$dir);
        $key = openssl_pkey_new(['private_key_type' => OPENSSL_KEYTYPE_EC, 'curve_name' => 'prime256v1']);
        $conf = self::$dir . '/openssl.cnf';
        file_put_contents($conf, "[req]\ndistinguished_name=dn\n[dn]\n[ext]\nsubjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:TRUE\n");
        $csr = openssl_csr_new(['commonName' => '127.0.0.1'], $key, ['config' => $conf, 'digest_alg' => 'sha256']);
        $cert = openssl_csr_sign($csr, null, $key, 2, ['config' => $conf, 'x509_extensions' => 'ext', 'digest_alg' => 'sha256'], random_int(1, PHP_INT_MAX));
        openssl_x509_export_to_file($cert, self::$dir . '/cert.pem');
        openssl_pkey_export_to_file($key, self::$dir . '/key.pem');

        for ($try = 0; $try < 5 && self::$proc === null; $try++) {
            $probe = stream_socket_server('tcp://127.0.0.1:0');
            $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
            fclose($probe);
            $proc = proc_open(['openssl', 's_server', '-accept', "127.0.0.1:$port", '-cert', self::$dir . '/cert.pem', '-key', self::$dir . '/key.pem', '-www', '-quiet'],
                [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            for ($i = 0; $i < 100; $i++) {
                $s = @stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 1);
                if ($s !== false) {
                    fclose($s);
                    self::$proc = $proc;
                    self::$base = "https://127.0.0.1:$port";
                    break;
                }
                if (!proc_get_status($proc)['running']) {
                    break;
                }
                usleep(50_000);
            }
            if (self::$proc === null) {
                proc_terminate($proc);
                proc_close($proc);
            }
        }
    }

    public static function tearDownAfterClass(): void
    {
        if (self::$proc !== null) {
            proc_terminate(self::$proc);
            proc_close(self::$proc);
            self::$proc = null;
        }
        if (isset(self::$dir)) {
            array_map('unlink', glob(self::$dir . '/*') ?: []);
            @rmdir(self::$dir);
        }
    }

    protected function setUp(): void
    {
        if (self::$proc === null) {
            $this->markTestSkipped('no openssl s_server');
        }
    }

    public function testExtraRootIsTrusted(): void
    {
        $r = (new Client(['api_key' => 'k', 'base_url' => self::$base, 'ca_file' => self::$dir . '/cert.pem']))->account->get();
        $this->assertSame(200, $r->status);
        $this->assertMatchesRegularExpression('/Protocol\s*:\s*TLSv1\.[23]/', $r->body, 'TLS 1.2 or newer');
    }

    public function testEnvironmentCaFile(): void
    {
        putenv('MAILBOLT_CA_FILE=' . self::$dir . '/cert.pem');
        try {
            $this->assertSame(200, (new Client(['api_key' => 'k', 'base_url' => self::$base]))->account->get()->status);
        } finally {
            putenv('MAILBOLT_CA_FILE');
        }
    }

    public function testUnknownRootIsRefused(): void
    {
        $this->expectException(ConnectionException::class);
        (new Client(['api_key' => 'k', 'base_url' => self::$base, 'max_retries' => 0]))->account->get();
    }
}
