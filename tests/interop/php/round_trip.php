<?php
// PECL stomp (Debian's php-stomp) as a PHP application uses it: send with receipts, then
// receive in client-ack mode. Arguments: port, queue, how many to send, how many to read.
// Prints one JSON document: the bodies and headers read.
[$_, $port, $queue, $send, $receive] = $argv;
$stomp = new Stomp("tcp://127.0.0.1:$port");
for ($i = 0; $i < (int)$send; $i++) {
    $stomp->send($queue, "m$i", ["persistent" => "true", "colour" => "c$i", "receipt" => "r$i"]);
}
$stomp->subscribe($queue, ["ack" => "client", "activemq.prefetchSize" => "100"]);
$stomp->setReadTimeout(3);
$bodies = [];
$headers = [];
while (count($bodies) < (int)$receive && ($frame = $stomp->readFrame()) !== false) {
    $bodies[] = $frame->body;
    $headers[] = $frame->headers;
    $stomp->ack($frame);
}
$stomp->unsubscribe($queue);
echo json_encode(["bodies" => $bodies, "headers" => $headers]), "\n";
