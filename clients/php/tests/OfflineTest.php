<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Client;
use Mailbolt\Exception\ConnectionException;
use PHPUnit\Framework\TestCase;

/** What needs no server: the operation map, configuration, and transport failures. */
final class OfflineTest extends TestCase
{
    public function testOperationsMapNamesRealMethods(): void
    {
        $map = json_decode((string) file_get_contents(__DIR__ . '/../operations.json'), true, 512, JSON_THROW_ON_ERROR);
        $this->assertCount(58, $map);
        $client = new Client(['api_key' => 'svc_test_x', 'base_url' => 'http://127.0.0.1:1']);
        foreach ($map as $op => $method) {
            $this->assertMatchesRegularExpression('/^\$client->(\w+)->(\w+)$/', $method, $op);
            preg_match('/^\$client->(\w+)->(\w+)$/', $method, $m);
            $this->assertTrue(property_exists($client, $m[1]), "$op: no \$client->{$m[1]}");
            $this->assertTrue(method_exists($client->{$m[1]}, $m[2]), "$op: no $method");
        }
        $this->assertSame(count($map), count(array_unique($map)), 'one method per operation');
    }

    public function testOperationsMapMatchesOpenApi(): void
    {
        $doc = __DIR__ . '/../../../web/openapi.json';
        if (!is_file($doc)) {
            $this->markTestSkipped('web/openapi.json is not beside the client');
        }
        $ids = [];
        foreach (json_decode((string) file_get_contents($doc), true)['paths'] as $item) {
            foreach ($item as $op) {
                if (is_array($op) && isset($op['operationId']) && ($op['x-client'] ?? true) !== false) {
                    $ids[] = $op['operationId'];
                }
            }
        }
        $map = json_decode((string) file_get_contents(__DIR__ . '/../operations.json'), true);
        $this->assertEqualsCanonicalizing($ids, array_keys($map));
    }

    public function testEnvironmentConfiguration(): void
    {
        $saved = [getenv('MAILBOLT_BASE_URL'), getenv('MAILBOLT_API_KEY')];
        putenv('MAILBOLT_BASE_URL=http://127.0.0.1:1/v1/');
        putenv('MAILBOLT_API_KEY=svc_test_env');
        try {
            $this->assertSame('http://127.0.0.1:1', (new Client())->baseUrl());
            $this->assertSame('http://example.test', (new Client(['base_url' => 'http://example.test/']))->baseUrl());
        } finally {
            putenv($saved[0] === false ? 'MAILBOLT_BASE_URL' : 'MAILBOLT_BASE_URL=' . $saved[0]);
            putenv($saved[1] === false ? 'MAILBOLT_API_KEY' : 'MAILBOLT_API_KEY=' . $saved[1]);
        }
    }

    public function testUnknownOptionIsRefused(): void
    {
        $this->expectException(\InvalidArgumentException::class);
        new Client(['apikey' => 'x']);
    }

    public function testConnectionFailureIsTypedAndNotRetried(): void
    {
        $sleeps = 0;
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $addr = stream_socket_get_name($probe, false);
        fclose($probe); // nothing listens there now
        $c = new Client(['api_key' => 'k', 'base_url' => "http://$addr", 'sleep' => function () use (&$sleeps): void {
            $sleeps++;
        }]);
        try {
            $c->account->get();
            $this->fail('no exception');
        } catch (ConnectionException $e) {
            $this->assertStringContainsString('/v1/account', $e->getMessage());
        }
        $this->assertSame(0, $sleeps);
    }

    public function testIdempotencyKeysAreUuidV4(): void
    {
        $a = Client::newIdempotencyKey();
        $this->assertMatchesRegularExpression('/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/', $a);
        $this->assertNotSame($a, Client::newIdempotencyKey());
    }

    public function testBackoffGrowsAndIsCapped(): void
    {
        $c = new Client(['api_key' => 'k', 'backoff_base' => 1.0, 'backoff_max' => 4.0]);
        for ($i = 0; $i < 20; $i++) {
            $d0 = $c->retryDelay(0, null);
            $d3 = $c->retryDelay(3, null);
            $this->assertTrue($d0 >= 0.5 && $d0 <= 1.0, "attempt 0: $d0");
            $this->assertTrue($d3 >= 2.0 && $d3 <= 4.0, "attempt 3 capped: $d3");
            $ra = $c->retryDelay(0, 3.0);
            $this->assertTrue($ra >= 3.0 && $ra <= 3.1, "Retry-After: $ra");
        }
    }
}
