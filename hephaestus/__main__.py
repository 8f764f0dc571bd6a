from hephaestus.cli import main

main()
