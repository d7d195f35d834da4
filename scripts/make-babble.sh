#!/bin/sh
# make-babble.sh OUT.wav SET: a multi-talker babble WITH pitch for
# duplex-bench --vad-compare --vad-noise-wav (the generated "babble" kind is
# formant-filtered noise without pitch). Eight espeak-ng talkers (voices,
# texts, speeds and start offsets differ), each looped to 60 s, mixed at
# equal active level, 16 kHz mono. SET a or b: two disjoint sets of voices
# and texts (choose constants on one, measure on the other).
set -eu
out=${1:?usage: make-babble.sh OUT.wav a|b}
set=${2:-a}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$set" = a ]; then
	talkers='en+m1|150|The weather report says rain in the morning and sun in the afternoon, so take an umbrella just in case.
en+f2|170|I told him the meeting was moved to Thursday but he still came on Wednesday and waited for an hour.
en-us+m3|160|Could you pass me the salt please, and maybe the pepper too if it is not too much trouble.
en-gb-x-rp+f3|140|My sister bought a new car last week and she already drove it all the way to the coast and back.
en+m4|180|Did you see the game last night? The second half was much better than the first one, I think.
en-us+f5|155|We should paint the kitchen yellow, or green, or really any color except this dull grey.
en-gb-scotland+m2|145|The train was late again this morning because of a problem with the signals near the station.
en+f1|165|She says the cake needs another ten minutes in the oven before it is ready to come out.'
else
	talkers='en+m6|160|Remember to water the plants on the balcony while we are away for the long weekend.
en+f5|150|The children built a castle out of cardboard boxes and painted flags on all of the towers.
en-us+m7|170|Honestly I think the second movie was better, the story made much more sense to me.
en-gb-x-rp+m1|145|Our neighbours are having a party tonight so it might be a little noisy after nine.
en+f3|175|If you finish the report by Friday we can send it to the client before the holidays.
en-us+f2|155|The museum opens at ten, but the queue usually starts forming long before that.
en-gb-scotland+f4|150|He plays the violin every evening and the whole street can hear him practising scales.
en+m2|165|Let us meet at the corner cafe, the one with the blue door and the little garden.'
fi
i=0
echo "$talkers" | while IFS='|' read -r voice speed text; do
	i=$((i + 1))
	espeak-ng -v "$voice" -s "$speed" -w "$tmp/raw$i.wav" "$text"
	# 16 kHz, then a loop of 70 s started i×1.7 s in, trimmed to 60 s
	sox "$tmp/raw$i.wav" -r 16000 -c 1 "$tmp/t$i.wav" norm -20
	sox "$tmp/t$i.wav" "$tmp/l$i.wav" repeat 25
	sox "$tmp/l$i.wav" "$tmp/s$i.wav" trim "$(echo "$i * 1.7" | bc)" 60
done
sox -m "$tmp"/s*.wav -b 16 "$out" norm -6
