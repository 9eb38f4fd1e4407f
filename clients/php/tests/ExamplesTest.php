<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use PHPUnit\Framework\TestCase;

/** examples/run, as a user would run it. */
final class ExamplesTest extends TestCase
{
    /**
     * @param array<string, string> $env
     * @return array{int, string, string}
     */
    private static function runExample(string $command, array $env, string $stdin = ''): array
    {
        $proc = proc_open([__DIR__ . '/../examples/run', $command],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env + getenv());
        fwrite($pipes[0], $stdin);
        fclose($pipes[0]);
        $out = (string) stream_get_contents($pipes[1]);
        $err = (string) stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        return [proc_close($proc), $out, $err];
    }

    public function testVerifyTheVector(): void
    {
        $path = getenv('MAILBOLT_WEBHOOK_VECTOR') ?: __DIR__ . '/../../../testdata/webhooks/signature.json';
        $v = json_decode((string) file_get_contents($path), true);
        $env = [
            'MAILBOLT_EXAMPLE_WEBHOOK_SECRET' => $v['secret'],
            'MAILBOLT_EXAMPLE_SIGNATURE' => $v['header'],
            'MAILBOLT_EXAMPLE_TIMESTAMP' => (string) $v['timestamp'],
            'MAILBOLT_EXAMPLE_NOW' => (string) ($v['timestamp'] + 10),
        ];
        $this->assertSame([0, "valid\n", ''], self::runExample('verify', $env, $v['body']));
        $this->assertSame([1, "invalid\n", ''], self::runExample('verify', $env, $v['body'] . ' '));
        $this->assertSame([1, "invalid\n", ''], self::runExample('verify', ['MAILBOLT_EXAMPLE_NOW' => (string) ($v['timestamp'] + 301)] + $env, $v['body']));
        $rotated = ['MAILBOLT_EXAMPLE_WEBHOOK_SECRET' => $v['previous_secret'] . ',' . $v['secret'], 'MAILBOLT_EXAMPLE_SIGNATURE' => $v['header_during_rotation']] + $env;
        $this->assertSame([0, "valid\n", ''], self::runExample('verify', $rotated, $v['body']));
    }

    public function testSendWithTheTestKey(): void
    {
        if ((string) getenv('MAILBOLT_BASE_URL') === '') {
            $this->markTestSkipped('MAILBOLT_BASE_URL is not set: run through clients/harness.sh');
        }
        [$status, $out, $err] = self::runExample('send', [
            'MAILBOLT_API_KEY' => (string) getenv('MAILBOLT_TEST_API_KEY'),
            'MAILBOLT_EXAMPLE_FROM' => 'Examples <examples@example.com>',
            'MAILBOLT_EXAMPLE_TO' => 'ann@example.net',
        ]);
        $this->assertSame(0, $status, $err);
        $this->assertMatchesRegularExpression('/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\n$/', $out);
    }
}
