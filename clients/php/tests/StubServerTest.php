<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Client;
use Mailbolt\Exception\ApiException;
use Mailbolt\Exception\ServerException;
use Mailbolt\Exception\ValidationException;
use PHPUnit\Framework\TestCase;

/**
 * The retry rules against a scripted stub (`php -S`), which can answer 503 and
 * 504 on demand: no Mailbolt server needed, and no real sleeping.
 */
final class StubServerTest extends TestCase
{
    private static string $dir;
    /** @var resource|null */
    private static $proc = null;
    private static string $base;
    /** @var list<float> */
    private array $sleeps = [];

    public static function setUpBeforeClass(): void
    {
        self::$dir = sys_get_temp_dir() . '/mailbolt-php-stub-' . bin2hex(random_bytes(4));
        mkdir(self::$dir);
        for ($try = 0; $try < 5 && self::$proc === null; $try++) {
            $probe = stream_socket_server('tcp://127.0.0.1:0');
            $port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
            fclose($probe);
            $env = getenv() + ['STUB_DIR' => self::$dir];
            $env['STUB_DIR'] = self::$dir;
            $proc = proc_open([PHP_BINARY, '-S', "127.0.0.1:$port", __DIR__ . '/fixtures/stub-router.php'],
                [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
            for ($i = 0; $i < 100; $i++) {
                $s = @stream_socket_client("tcp://127.0.0.1:$port", $errno, $errstr, 1);
                if ($s !== false) {
                    fclose($s);
                    self::$proc = $proc;
                    self::$base = "http://127.0.0.1:$port";
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
        if (self::$proc === null) {
            self::fail('the stub server did not start');
        }
    }

    public static function tearDownAfterClass(): void
    {
        if (self::$proc !== null) {
            proc_terminate(self::$proc);
            proc_close(self::$proc);
            self::$proc = null;
        }
        array_map('unlink', glob(self::$dir . '/*') ?: []);
        @rmdir(self::$dir);
    }

    protected function setUp(): void
    {
        file_put_contents(self::$dir . '/script', '[]');
        file_put_contents(self::$dir . '/log', '');
        $this->sleeps = [];
    }

    /** @param list<array{int, array<string, string>, string}> $answers */
    private function script(array $answers): void
    {
        file_put_contents(self::$dir . '/script', json_encode($answers));
    }

    /** @return list<array<string, mixed>> */
    private function log(): array
    {
        $lines = array_filter(explode("\n", (string) file_get_contents(self::$dir . '/log')));
        return array_values(array_map(static fn ($l) => json_decode($l, true), $lines));
    }

    private function client(array $options = []): Client
    {
        $sleeps = &$this->sleeps;
        return new Client($options + [
            'api_key' => 'svc_test_stub',
            'base_url' => self::$base,
            'sleep' => static function (float $s) use (&$sleeps): void {
                $sleeps[] = $s;
            },
        ]);
    }

    private static function error(int $status, string $code, array $headers = []): array
    {
        return [$status, $headers + ['X-Request-Id' => "req-$status"], json_encode(['error' => ['code' => $code, 'message' => "stub $code"]])];
    }

    public function testSendRetriesTransientCodesWithOneIdempotencyKey(): void
    {
        $this->script([
            self::error(503, 'SERVICE_UNAVAILABLE'),
            self::error(504, 'GATEWAY_TIMEOUT'),
            self::error(429, 'RATE_LIMIT_EXCEEDED', ['Retry-After' => '2']),
            [202, ['X-RateLimit-Limit' => '10', 'X-RateLimit-Remaining' => '9', 'X-RateLimit-Reset' => '1795320001', 'X-Request-Id' => 'req-ok'], '{"id":"m1","status":"queued"}'],
        ]);
        $sent = $this->client()->messages->send(['from' => 'a@example.com', 'to' => ['b@example.net'], 'subject' => 's', 'text' => 't']);
        $this->assertSame('m1', $sent['id']);
        $this->assertSame('req-ok', $sent->requestId);
        $this->assertSame(10, $sent->rateLimit->limit);
        $this->assertSame(9, $sent->rateLimit->remaining);
        $this->assertSame(1795320001, $sent->rateLimit->reset);

        $log = $this->log();
        $this->assertCount(4, $log);
        $keys = array_unique(array_map(static fn ($r) => $r['headers']['idempotency-key'] ?? '', $log));
        $this->assertCount(1, $keys, 'one Idempotency-Key across the retries');
        $this->assertSame($sent->idempotencyKey, $keys[0]);
        $this->assertCount(1, array_unique(array_column($log, 'body')), 'the same bytes every time');
        foreach ($log as $r) {
            $this->assertSame('POST', $r['method']);
            $this->assertSame('/v1/messages', $r['uri']);
            $this->assertSame('svc_test_stub', $r['headers']['x-api-key']);
            $this->assertSame('mailbolt-php/0.1.0', $r['headers']['user-agent']);
            $this->assertSame('application/json', $r['headers']['content-type']);
        }
        // Exponential backoff with jitter, then the server's Retry-After.
        $this->assertCount(3, $this->sleeps);
        $this->assertGreaterThanOrEqual(0.25, $this->sleeps[0]);
        $this->assertLessThanOrEqual(0.5, $this->sleeps[0]);
        $this->assertGreaterThanOrEqual(0.5, $this->sleeps[1]);
        $this->assertLessThanOrEqual(1.0, $this->sleeps[1]);
        $this->assertGreaterThanOrEqual(2.0, $this->sleeps[2]);
        $this->assertLessThanOrEqual(2.1, $this->sleeps[2]);
    }

    public function testCallerIdempotencyKeyAndBatch(): void
    {
        $this->script([self::error(503, 'SERVICE_UNAVAILABLE'), [202, [], '{"data":[{"id":"a"},{"id":"b"}]}']]);
        $r = $this->client()->messages->sendBatch([['from' => 'a@example.com'], ['from' => 'b@example.com']], ['idempotency_key' => 'mine-1']);
        $this->assertSame(['a', 'b'], array_column($r['data'], 'id'));
        $log = $this->log();
        $this->assertSame(['mine-1', 'mine-1'], array_map(static fn ($x) => $x['headers']['idempotency-key'], $log));
        $this->assertSame('/v1/messages/batch', $log[0]['uri']);
        $this->assertSame(['messages' => [['from' => 'a@example.com'], ['from' => 'b@example.com']]], json_decode($log[0]['body'], true));
    }

    public function testRetriesStopAtTheConfiguredCount(): void
    {
        $this->script(array_fill(0, 5, self::error(503, 'SERVICE_UNAVAILABLE')));
        try {
            $this->client(['max_retries' => 2])->account->get();
            $this->fail('no exception');
        } catch (ServerException $e) {
            $this->assertSame(503, $e->status);
            $this->assertSame('SERVICE_UNAVAILABLE', $e->errorCode);
            $this->assertSame('req-503', $e->requestId);
        }
        $this->assertCount(3, $this->log(), 'one call and two retries');
        $this->assertCount(2, $this->sleeps);
    }

    public function testDefaultIsThreeRetries(): void
    {
        $this->script(array_fill(0, 6, self::error(429, 'RATE_LIMIT_EXCEEDED', ['Retry-After' => '1'])));
        try {
            $this->client()->account->get();
            $this->fail('no exception');
        } catch (ApiException $e) {
            $this->assertSame(429, $e->status);
        }
        $this->assertCount(4, $this->log());
    }

    public function testNothingElseIsRetried(): void
    {
        foreach ([[500, 'INTERNAL_ERROR'], [429, 'QUOTA_EXCEEDED'], [400, 'VALIDATION_ERROR'], [409, 'CONFLICT'], [502, 'BAD_GATEWAY']] as [$status, $code]) {
            $this->setUp();
            $this->script([self::error($status, $code), [200, [], '{}']]);
            try {
                $this->client()->messages->send(['from' => 'a@example.com']);
                $this->fail("no exception for $code");
            } catch (ApiException $e) {
                $this->assertSame($status, $e->status);
                $this->assertSame($code, $e->errorCode);
            }
            $this->assertCount(1, $this->log(), "$code was retried");
            $this->assertSame([], $this->sleeps);
        }
    }

    public function testErrorDetailsAndNonJsonErrors(): void
    {
        $this->script([
            [400, ['X-Request-Id' => 'r1'], '{"error":{"code":"VALIDATION_ERROR","message":"bad limit","details":{"field":"limit"}}}'],
            [503, [], 'upstream down'],
        ]);
        try {
            $this->client()->messages->list(['limit' => 0]);
            $this->fail('no exception');
        } catch (ValidationException $e) {
            $this->assertSame(['field' => 'limit'], $e->details);
            $this->assertSame('bad limit', $e->getMessage());
            $this->assertSame('r1', $e->requestId);
        }
        try {
            $this->client(['max_retries' => 0])->account->get();
            $this->fail('no exception');
        } catch (ServerException $e) {
            $this->assertSame('SERVICE_UNAVAILABLE', $e->errorCode);
        }
    }

    public function testRequestShapes(): void
    {
        $c = $this->client();
        $c->suppressions->delete('ann+x@example.com');
        $c->templates->get('t1', 2);
        $c->messages->list(['limit' => 2, 'cursor' => 'abc=', 'status' => null]);
        $c->webhooks->replayEvent('w1', 'e1');
        $c->grader->check('example.com');
        $log = $this->log();
        $this->assertSame('DELETE', $log[0]['method']);
        $this->assertSame('/v1/suppressions/ann%2Bx%40example.com', $log[0]['uri']);
        $this->assertSame('/v1/templates/t1?version=2', $log[1]['uri']);
        $this->assertArrayNotHasKey('idempotency-key', $log[1]['headers'], 'no key on a GET');
        $this->assertSame('/v1/messages?limit=2&cursor=abc%3D', $log[2]['uri']);
        $this->assertSame('/v1/webhooks/w1/events/e1/replay', $log[3]['uri']);
        $this->assertSame('{}', $log[3]['body']);
        $this->assertSame('{"domain":"example.com"}', $log[4]['body']);
    }

    public function testPageModeFollowsTheLinkHeader(): void
    {
        $link = static fn (int $p, bool $next) => ($next ? '</v1/domains?limit=1&page=' . ($p + 1) . '>; rel="next", ' : '') . '</v1/domains?limit=1&page=1>; rel="first", </v1/domains?limit=1&page=3>; rel="last"';
        $this->script([
            [200, ['Link' => $link(1, true)], '{"data":[{"id":"d1"}],"page":1,"limit":1,"total":3}'],
            [200, ['Link' => $link(2, true)], '{"data":[{"id":"d2"}],"page":2,"limit":1,"total":3}'],
            [200, ['Link' => $link(3, false)], '{"data":[{"id":"d3"}],"page":3,"limit":1,"total":3}'],
        ]);
        $ids = array_column(iterator_to_array($this->client()->domains->all(['limit' => 1, 'page' => 1]), false), 'id');
        $this->assertSame(['d1', 'd2', 'd3'], $ids);
        $this->assertSame(['/v1/domains?limit=1&page=1', '/v1/domains?limit=1&page=2', '/v1/domains?limit=1&page=3'], array_column($this->log(), 'uri'));
    }
}
