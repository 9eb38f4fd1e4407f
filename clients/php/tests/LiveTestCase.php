<?php
declare(strict_types=1);

namespace Mailbolt\Tests;

use Mailbolt\Client;
use PHPUnit\Framework\TestCase;

/** Tests against a running server (clients/harness.sh); skipped when MAILBOLT_BASE_URL is unset. */
abstract class LiveTestCase extends TestCase
{
    /** @var list<float> the delays the last client() asked to sleep */
    protected array $sleeps = [];

    protected function setUp(): void
    {
        if ((string) getenv('MAILBOLT_BASE_URL') === '') {
            $this->markTestSkipped('MAILBOLT_BASE_URL is not set: run through clients/harness.sh');
        }
        $this->sleeps = [];
    }

    protected static function env(string $name): string
    {
        $v = getenv($name);
        if ($v === false || $v === '') {
            self::fail("$name is not set");
        }
        return $v;
    }

    /** A client with the named key whose sleeps are recorded (and really slept). */
    protected function client(string $keyVar = 'MAILBOLT_TEST_API_KEY', array $options = []): Client
    {
        $sleeps = &$this->sleeps;
        return new Client($options + [
            'api_key' => self::env($keyVar),
            'sleep' => static function (float $s) use (&$sleeps): void {
                $sleeps[] = $s;
                usleep((int) round($s * 1e6));
            },
        ]);
    }

    /** @return array<string, mixed> */
    protected static function message(string $subject = 'php client test', array $extra = []): array
    {
        return $extra + [
            'from' => 'PHP Tests <php@example.com>',
            'to' => ['ann@example.net'],
            'subject' => $subject,
            'text' => 'Hello from the PHP client tests.',
        ];
    }

    protected static function unique(): string
    {
        return bin2hex(random_bytes(6));
    }
}
